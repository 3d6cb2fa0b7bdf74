package jobs

import (
	"math"
	"time"
)

// A pending job that fails an admission check (its tier's, type's or
// group's cap, or a conflict on its id) is set aside on the resource that
// blocks it, so that it is not examined again at every admission. When
// the resource frees a unit, every job set aside on it goes back to the
// heaps, and admission examines them again in the fair order with all
// the other candidates: the best admissible job wins, whenever it was set
// aside (a first-in-first-out hand-back would let a blocked job of a heavy
// client hold the place of a lighter client's job). Invariant: a parked
// job is blocked by the resource it waits on, so no slot stays idle while
// an admissible job waits.

// resource is something a job may wait for: a tier's, type's or group's
// capacity, or a conflict id.
type resource interface {
	parking() *lot
	free() int // units a waiting job could take now
}

// lot holds the jobs set aside for a resource.
type lot struct {
	jobs     []*entry
	released bool // listed in core.released
}

type typeState struct {
	name    JobType
	cfg     TypeConfig
	tier    int
	running int
	lot     lot
}

func (t *typeState) parking() *lot { return &t.lot }

func (t *typeState) free() int {
	if t.cfg.MaxConcurrency == 0 {
		return math.MaxInt
	}
	return t.cfg.MaxConcurrency - t.running
}

type tierState struct {
	name    string
	cap     int
	running int
	lot     lot
}

func (t *tierState) parking() *lot { return &t.lot }
func (t *tierState) free() int     { return t.cap - t.running }

type conflictKey struct{ group, id string }

type conflict struct {
	key     conflictKey
	running int
	lot     lot
}

func (cf *conflict) parking() *lot { return &cf.lot }

func (cf *conflict) free() int {
	if cf.running > 0 {
		return 0
	}
	return 1
}

// blocked reports the per-job admission check that e fails, if any, with
// the resource to wait for.
func (c *core) blocked(e *entry) (string, resource) {
	if t := c.tiers[e.base]; t.free() <= 0 {
		return "tier cap", t
	}
	if t := e.typ; t.free() <= 0 {
		return "type cap", t
	}
	if cg := e.typ.cfg.ConflictGroup; cg != "" {
		if cf := c.conflicts[conflictKey{cg, e.tid.id}]; cf != nil && cf.free() <= 0 {
			return "conflict", cf
		}
	}
	return "", nil
}

// park sets a blocked job aside until the resource it waits for frees.
// It keeps aging meanwhile.
func (c *core) park(e *entry, r resource, reason string, now time.Time) {
	c.unplace(e)
	e.st = parked
	e.reason = reason
	l := r.parking()
	l.jobs = append(l.jobs, e)
	c.skip(e, reason, now)
}

// release notes that r may have room for the jobs waiting for it.
func (c *core) release(r resource) {
	if l := r.parking(); !l.released && len(l.jobs) > 0 {
		l.released = true
		c.released = append(c.released, r)
	}
}

// unpark brings back the jobs of every released resource that has a free
// unit. It reports whether any came back.
func (c *core) unpark() bool {
	back := false
	for _, r := range c.released {
		l := r.parking()
		l.released = false
		if r.free() <= 0 {
			continue // taken meanwhile: its jobs stay set aside
		}
		for i, e := range l.jobs {
			l.jobs[i] = nil
			if e.st != parked { // withdrawn meanwhile
				continue
			}
			e.reason = ""
			c.place(e)
			back = true
		}
		l.jobs = l.jobs[:0]
		if cf, ok := r.(*conflict); ok && cf.running == 0 {
			delete(c.conflicts, cf.key)
		}
	}
	c.released = c.released[:0]
	return back
}
