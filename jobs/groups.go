package jobs

import (
	"math"
	"time"
)

// Groups share the slots: minimums first, then weights, never beyond a
// group's cap or demand (alloc.go computes the shares). Admission serves a
// group's sure slots first, then the slots whose owner a tie leaves open,
// then lends idle slots to any group below its cap.

type group struct {
	name    string
	idx     int
	weight  float64
	min     int
	cap     int
	paused  bool
	pending int
	running int
	limit   int // slots it could use at the last allocation
	alloc   int // integer allocation (largest remainder), reported
	sure    int // slots admission serves it first
	ceil    int // slots it may hold while contending for tied fractions
	lot     lot // urgent jobs waiting for the group's cap or its resumption

	// Aging stops while the group is paused.
	pausedAt    time.Time
	pausedTotal time.Duration
	frozen      []*entry // pending jobs whose aging waits for the resumption
}

func (g *group) parking() *lot { return &g.lot }

func (g *group) free() int {
	if g.paused {
		return 0
	}
	return g.cap - g.running
}

// pausedFor is how long the group has been paused in all, up to now.
func (g *group) pausedFor(now time.Time) time.Duration {
	if g.paused {
		return g.pausedTotal + now.Sub(g.pausedAt)
	}
	return g.pausedTotal
}

// Passes of pick: what counts as a free slot of a group.
const (
	passSure   = iota // below the slots its allocation gives it outright
	passShare         // below its share rounded up, for tied fractions
	passBorrow        // below its cap: slots nobody else can use now
)

// room is what a group may hold in a pass.
func (g *group) room(pass int) int {
	switch pass {
	case passSure:
		return g.sure
	case passShare:
		return g.ceil
	}
	return g.cap
}

func (c *core) addGroup(name string, weight float64, minSlots, capacity int) *group {
	if capacity == 0 || capacity > c.s.Slots {
		capacity = c.s.Slots
	}
	g := &group{name: name, idx: len(c.glist), weight: weight, min: minSlots, cap: capacity}
	c.groups[name] = g
	c.glist = append(c.glist, g)
	return g
}

func (c *core) group(name string) *group {
	if g, ok := c.groups[name]; ok {
		return g
	}
	return c.addGroup(name, c.s.DefaultGroupWeight, 0, 0)
}

// setDemand records a change of a group's pending and running counts and
// marks the allocation stale when what the group can use may have changed.
func (c *core) setDemand(g *group, dPending, dRunning int) {
	g.pending += dPending
	g.running += dRunning
	if c.limit(g) != g.limit {
		c.allocDirty = true
	}
}

// stale reports whether the allocation must be recomputed: a weight or a
// pause changed, or some group's usable slots differ from the last
// allocation (a completion followed by a submission leaves them as they
// were).
func (c *core) stale() bool {
	if !c.allocDirty {
		return false
	}
	if c.allocReason != 0 {
		return true
	}
	for _, g := range c.glist {
		if c.limit(g) != g.limit {
			return true
		}
	}
	c.allocDirty = false
	return false
}

func (c *core) limit(g *group) int {
	if g.paused {
		return 0
	}
	return min(g.cap, g.pending+g.running)
}

// setWeight changes a group's weight; the allocation follows.
func (c *core) setWeight(g *group, w float64, now time.Time) {
	if g.weight == w {
		return
	}
	c.events = append(c.events, Event{
		Kind: EventWeightChanged, Time: now, Group: g.name, PrevWeight: g.weight, NewWeight: w,
	})
	g.weight = w
	c.allocDirty, c.allocReason = true, ReasonWeightChange
}

// setPaused pauses or resumes a group. A paused group's jobs are not
// admitted and do not age; on resumption they age on from where they were.
func (c *core) setPaused(g *group, paused bool, now time.Time) {
	if g.paused == paused {
		return
	}
	if paused {
		g.pausedAt = now
	} else {
		g.pausedTotal += now.Sub(g.pausedAt)
	}
	g.paused = paused
	if !paused {
		c.release(g)
		frozen := g.frozen
		g.frozen = nil
		for _, e := range frozen {
			if e.st == queued || e.st == parked {
				c.reage(e, now)
			}
		}
	}
	c.allocDirty, c.allocReason = true, ReasonPause
}

// reallocate recomputes every group's slot allocation.
func (c *core) reallocate(now time.Time) {
	c.want = resize(c.want, len(c.glist))
	for i, g := range c.glist {
		g.limit = c.limit(g)
		c.want[i] = share{weight: g.weight, min: g.min, limit: g.limit}
	}
	alloc, exact, contested := c.alloc.allocate(c.s.Slots, c.want)
	if c.allocReason != 0 || len(c.fair) != len(c.glist) {
		// The nominal shares depend on weights, caps and pauses only.
		nominal := make([]share, len(c.glist))
		for i, g := range c.glist {
			if !g.paused {
				nominal[i] = share{weight: g.weight, min: g.min, limit: g.cap}
			}
		}
		var a allocator
		fair, _, _ := a.allocate(c.s.Slots, nominal)
		c.fair = append(c.fair[:0], fair...)
	}
	redistributed := 0
	for i, g := range c.glist {
		g.sure, g.ceil = alloc[i], alloc[i]
		if contested[i] {
			g.sure = int(math.Floor(exact[i] + eps))
			g.ceil = g.sure + 1
		}
		if alloc[i] == g.alloc {
			continue
		}
		reason := c.allocReason
		switch {
		case g.pending+g.running == 0:
			reason = ReasonGroupDrained
		case reason == 0:
			reason = ReasonRebalance
		}
		c.events = append(c.events, Event{
			Kind: EventAllocationChanged, Time: now, Group: g.name,
			PrevSlots: g.alloc, NewSlots: alloc[i], Reason: reason,
		})
		g.alloc = alloc[i]
		redistributed += max(0, alloc[i]-c.fair[i])
	}
	c.stats.redistributed += uint64(redistributed)
	c.allocDirty, c.allocReason = false, 0
}
