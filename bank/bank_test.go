package bank

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ref is the reference model: entries sorted by depth, stable by insertion sequence.
type ref struct {
	items []refEntry
	seq   int
}

type refEntry struct{ id, depth, seq int }

func (r *ref) insert(id, depth int) {
	r.seq++
	r.items = append(r.items, refEntry{id, depth, r.seq})
	slices.SortStableFunc(r.items, func(a, b refEntry) int { return cmp.Compare(a.depth, b.depth) })
}

func (r *ref) remove() refEntry {
	e := r.items[len(r.items)-1]
	r.items = r.items[:len(r.items)-1]
	return e
}

func TestRemoveOrderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var b Bank[int]
		var r ref
		id := 0
		for range 300 {
			switch op := rng.IntN(10); {
			case op < 6: // mostly spawns near the young end, sometimes anywhere
				d := rng.IntN(20)
				if round%2 == 0 && b.Len() > 0 {
					d = b.buf[b.at(b.Len()-1)].Depth + rng.IntN(3) - 1
				}
				id++
				b.Insert(id, d)
				r.insert(id, d)
			case op < 9:
				x, d, ok := b.Remove()
				require.Equal(t, len(r.items) > 0, ok)
				if ok {
					want := r.remove()
					require.Equal(t, want.id, x)
					require.Equal(t, want.depth, d)
				}
			default:
				got := b.Split(nil)
				for _, e := range got {
					require.Equal(t, r.items[0].id, e.Item, "split takes the oldest")
					r.items = r.items[1:]
				}
			}
			require.Equal(t, len(r.items), b.Len())
			if p, ok := b.Peek(); ok {
				require.Equal(t, r.items[len(r.items)-1].id, p)
			}
		}
	}
}

func TestFastPathAndGeneralInsert(t *testing.T) {
	var b Bank[string]
	b.Insert("a", 1)
	b.Insert("b", 2)
	b.Insert("c", 2) // equal depth: LIFO
	b.Insert("d", 0) // general insertion at the old end
	b.Insert("e", 1) // general insertion in the middle, after "a"
	var got []string
	for {
		x, _, ok := b.Remove()
		if !ok {
			break
		}
		got = append(got, x)
	}
	assert.Equal(t, []string{"c", "b", "e", "a", "d"}, got)
	_, ok := b.Peek()
	assert.False(t, ok)
}

func TestRingWraps(t *testing.T) {
	var b Bank[int]
	// Split moves the head forward so later pushes wrap around the ring.
	for i := range 8 {
		b.Insert(i, 0)
	}
	for range 3 {
		b.Split(nil)
		for i := range 8 {
			b.Insert(100+i, 1)
			b.Insert(200+i, 0) // general insertion across the wrap
		}
	}
	depths := b.Clear(nil)
	assert.True(t, slices.IsSortedFunc(depths, func(a, c Entry[int]) int { return cmp.Compare(a.Depth, c.Depth) }))
	assert.Zero(t, b.Len())
	assert.Zero(t, b.Potential())
}

func checkSplit(t *testing.T, depths []int) {
	t.Helper()
	var b Bank[int]
	for i, d := range depths {
		b.Insert(i, d)
	}
	total := b.Potential()
	before := b.Clear(nil)
	for _, e := range before {
		b.Insert(e.Item, e.Depth)
	}
	got := b.Split(nil)
	require.NotEmpty(t, got)
	require.Equal(t, before[:len(got)], got, "the oldest, oldest first")
	dmin := before[0].Depth
	var taken float64
	for _, e := range got {
		taken += math.Ldexp(1, dmin-e.Depth)
	}
	assert.GreaterOrEqual(t, taken, total/4)
	last := math.Ldexp(1, dmin-got[len(got)-1].Depth)
	assert.Less(t, taken-last, total/4, "minimal")
	assert.Equal(t, len(depths)-len(got), b.Len())
}

func TestSplit(t *testing.T) {
	var b Bank[int]
	assert.Equal(t, []Entry[int]{{1, 1}}, b.Split([]Entry[int]{{1, 1}}), "empty bank")
	b.Insert(7, 5)
	assert.Equal(t, []Entry[int]{{7, 5}}, b.Split(nil), "one thread")
	assert.Zero(t, b.Len())

	checkSplit(t, []int{0, 1, 2, 3})
	checkSplit(t, []int{3, 3, 3, 3, 3, 3, 3, 3})             // takes 2 of 8
	checkSplit(t, []int{5, 6, 6, 7, 7, 7, 7, 8, 8, 9, 9, 9}) // a spawn tree's frontier
	checkSplit(t, []int{1000, 1001, 1002, 1050})
	checkSplit(t, []int{100000, 100000, 100000, 100000, 100000, 100003})
	checkSplit(t, []int{0, 2500, 2501, 5000}) // spread beyond float64's range

	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		depths := make([]int, 1+rng.IntN(40))
		base := rng.IntN(3000)
		for i := range depths {
			depths[i] = base + rng.IntN(12)
		}
		checkSplit(t, depths)
	}
}

func TestPotentialDeep(t *testing.T) {
	var b Bank[int]
	b.Insert(0, 2000)
	b.Insert(1, 2001)
	b.Insert(2, 2001)
	assert.Equal(t, 2.0, b.Potential())
	b.Insert(3, 5000)
	assert.Equal(t, 2.0, b.Potential(), "3000 levels deeper counts 0")
}

func TestNoRetainedReferences(t *testing.T) {
	var b Bank[*int]
	for i := range 10 {
		b.Insert(new(i), i%3)
	}
	b.Remove()
	b.Split(nil)
	b.Insert(new(42), 0)
	b.Clear(nil)
	for _, e := range b.buf {
		assert.Nil(t, e.Item)
	}
}

func BenchmarkInsertRemove(b *testing.B) {
	var bk Bank[int]
	for i := range 16 {
		bk.Insert(i, i)
	}
	for b.Loop() {
		bk.Insert(1, 20)
		bk.Remove()
	}
}

func TestPrune(t *testing.T) {
	var b Bank[int]
	for i := range 20 {
		b.Insert(i, i%5)
	}
	b.Prune(func(x int) bool { return x%3 != 0 })
	if b.Len() != 13 {
		t.Fatalf("Len = %d after pruning 7 of 20", b.Len())
	}
	prev := -1
	for b.Len() > 0 {
		x, d, _ := b.Remove()
		if x%3 == 0 {
			t.Fatalf("pruned %d still there", x)
		}
		if prev >= 0 && d > prev {
			t.Fatalf("order lost: depth %d after %d", d, prev)
		}
		prev = d
	}
}

func TestAny(t *testing.T) {
	var b Bank[int]
	if b.Any(func(int) bool { return true }) {
		t.Fatal("an empty bank has a thread")
	}
	for i := range 10 {
		b.Insert(i, i)
	}
	if !b.Any(func(x int) bool { return x == 0 }) || b.Any(func(x int) bool { return x > 9 }) {
		t.Fatal("Any misses the oldest or finds what is not there")
	}
}
