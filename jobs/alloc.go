package jobs

import (
	"cmp"
	"math"
	"slices"
)

// share is what the allocator knows of a group.
type share struct {
	weight float64
	min    int
	limit  int // slots the group can use now: min(cap, demand), 0 when paused
}

// eps absorbs float rounding when comparing fractional slots.
const eps = 1e-9

// room is a group's unfilled capacity during allocation.
type room struct {
	i     int
	c, w  float64
	extra float64
}

// allocator divides slots between groups. It keeps its buffers between
// calls, so the slices it returns are valid until the next call.
type allocator struct {
	out       []int
	exact     []float64
	contested []bool
	rooms     []room
}

// allocate gives minimums first, then the rest in proportion to the
// weights, never beyond a group's limit, handing what a group cannot use
// to the others (water-filling, so it is work-conserving). Fractions are
// rounded by largest remainder; on a tie the group with the smaller share
// gets the slot, because rounding down costs it relatively more. Slots
// that no group can use stay unallocated. exact holds the shares before
// rounding. contested marks the groups whose claim to one more slot ties
// exactly with groups that did not get it (equal remainder and share, as
// forty equal groups on sixteen slots): which of them holds the extra
// slot is left to admission, so that it rotates by fair order instead of
// going to the same groups forever.
func (a *allocator) allocate(slots int, gs []share) (out []int, exact []float64, contested []bool) {
	out = resize(a.out, len(gs))
	exact = resize(a.exact, len(gs))
	contested = resize(a.contested, len(gs))
	a.out, a.exact, a.contested = out, exact, contested
	left := slots
	for i, g := range gs {
		out[i] = min(g.min, g.limit)
		exact[i] = float64(out[i])
		left -= out[i]
	}
	if left <= 0 {
		return out, exact, contested
	}
	rooms := a.rooms[:0]
	var weights float64
	for i, g := range gs {
		if c := g.limit - out[i]; c > 0 {
			rooms = append(rooms, room{i: i, c: float64(c), w: g.weight})
			weights += g.weight
		}
	}
	a.rooms = rooms
	// Fill the groups that saturate first; the rest share what is left
	// in proportion to their weights.
	slices.SortFunc(rooms, func(x, y room) int { return cmp.Compare(x.c*y.w, y.c*x.w) })
	rest := float64(left)
	k := 0
	for ; k < len(rooms) && rooms[k].c*weights <= rest*rooms[k].w+eps; k++ {
		rooms[k].extra = rooms[k].c
		rest -= rooms[k].c
		weights -= rooms[k].w
	}
	for j := k; j < len(rooms); j++ {
		rooms[j].extra = rest * rooms[j].w / weights
	}
	var sum float64
	given := 0
	for j := range rooms {
		r := &rooms[j]
		sum += r.extra
		exact[r.i] += r.extra
		f := math.Floor(r.extra + eps)
		out[r.i] += int(f)
		given += int(f)
		r.c = r.extra // the share, for the tie-break
		r.extra -= f  // the fractional remainder
	}
	leftover := int(math.Round(sum)) - given
	if leftover <= 0 {
		return out, exact, contested
	}
	order := func(x, y room) int {
		if math.Abs(x.extra-y.extra) > eps {
			return cmp.Compare(y.extra, x.extra)
		}
		if math.Abs(x.c-y.c) > eps {
			return cmp.Compare(x.c, y.c)
		}
		return 0
	}
	slices.SortStableFunc(rooms, order)
	n := 0 // rooms with a fraction to round
	for n < len(rooms) && rooms[n].extra > eps {
		n++
	}
	for j := 0; j < n && j < leftover; j++ {
		out[rooms[j].i]++
	}
	if leftover < n && order(rooms[leftover-1], rooms[leftover]) == 0 {
		for _, r := range rooms[:n] {
			if order(r, rooms[leftover]) == 0 {
				contested[r.i] = true
			}
		}
	}
	return out, exact, contested
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
