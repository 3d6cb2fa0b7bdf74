package jobs

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

// core is the admission state. It has no lock and no goroutine: the
// Scheduler serialises calls and runs what dispatch admits. Its concepts
// live in files named after them: queue.go (bands, groups' key heaps, job
// heaps), keys.go (virtual time), groups.go and alloc.go (slot shares),
// aging.go, blocking.go (resources and set-aside jobs), admission.go,
// cost.go, retry.go.
type core struct {
	s         *settings
	epoch     time.Time
	tiers     []*tierState
	types     map[JobType]*typeState
	groups    map[string]*group
	glist     []*group
	keys      map[string]*fkey
	jobs      map[tid]*jobState
	conflicts map[conflictKey]*conflict
	bands     [][]*band // by effective tier, then base tier
	urgent    indexed[*entry]
	timers    indexed[*entry] // by next aging step
	delays    indexed[*entry] // retries, by end of backoff
	starts    indexed[*entry] // running jobs, by start tag
	nPending  int
	nRunning  int
	nDelayed  int
	seq       uint64
	vnow      float64 // the system virtual time V
	maxLag    float64 // Config.MaxLag in seconds
	nextSweep time.Time
	released  []resource // resources that freed while jobs wait for them

	allocDirty  bool
	allocReason AllocationReason
	alloc       allocator
	want        []share
	fair        []int // nominal shares, for the redistribution metric

	log    *slog.Logger
	stats  stats
	events []Event
}

// stats are the plain figures behind Scheduler.MetricsSnapshot.
type stats struct {
	wait          jobsmetrics.Histogram
	pendingTier   []int // pending jobs by effective tier
	promotions    uint64
	redistributed uint64
}

func newCore(s *settings) *core {
	now := s.Clock()
	c := &core{
		s:         s,
		epoch:     now,
		types:     make(map[JobType]*typeState),
		groups:    make(map[string]*group),
		keys:      make(map[string]*fkey),
		jobs:      make(map[tid]*jobState),
		conflicts: make(map[conflictKey]*conflict),
		maxLag:    s.MaxLag.Seconds(),
		nextSweep: now.Add(s.sweepEvery()),
		log:       s.Logger,
	}
	c.stats.pendingTier = make([]int, len(s.Tiers))
	for _, t := range s.Tiers {
		capacity := t.Cap
		if capacity == 0 || capacity > s.Slots {
			capacity = s.Slots
		}
		c.tiers = append(c.tiers, &tierState{name: t.Name, cap: capacity})
		// Aging only raises a tier: a job's effective tier is at least its base.
		bands := make([]*band, len(c.tiers))
		for j := range bands {
			bands[j] = &band{}
		}
		c.bands = append(c.bands, bands)
	}
	for name, tc := range s.Types {
		c.types[name] = &typeState{name: name, cfg: tc, tier: s.tierIndex[tc.Tier]}
	}
	// Named groups first, in a stable order, so allocation is reproducible.
	names := make([]string, 0, len(s.Groups))
	for name := range s.Groups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		g := s.Groups[name]
		c.addGroup(name, g.Weight, g.Min, g.Cap)
	}
	c.urgent = newIndexed(func(a, b *entry) bool {
		if !a.urgentAt.Equal(b.urgentAt) {
			return a.urgentAt.Before(b.urgentAt)
		}
		return a.seq < b.seq
	}, func(e *entry, i int) { e.urgIdx = int32(i) })
	c.timers = newIndexed(func(a, b *entry) bool { return a.nextAge.Before(b.nextAge) },
		func(e *entry, i int) { e.timerIdx = int32(i) })
	c.delays = newIndexed(func(a, b *entry) bool { return a.nextAge.Before(b.nextAge) },
		func(e *entry, i int) { e.timerIdx = int32(i) })
	c.starts = newIndexed(func(a, b *entry) bool {
		if a.startTag != b.startTag {
			return a.startTag < b.startTag
		}
		return a.seq < b.seq
	}, func(e *entry, i int) { e.startIdx = int32(i) })
	return c
}

// ms is t in milliseconds since the scheduler started.
func (c *core) ms(t time.Time) float64 { return float64(t.Sub(c.epoch)) / float64(time.Millisecond) }

// enqueue adds a job that has its tid, typ and weight set, under the
// named key and group. A retried job keeps its submission time.
func (c *core) enqueue(e *entry, key, grp string, now time.Time) {
	c.seq++
	e.seq = c.seq
	e.grp = c.group(grp)
	e.key = c.key(key, now)
	if e.submitted.IsZero() {
		e.submitted = now
		e.pausedBase = e.grp.pausedFor(now)
	}
	if e.js == nil {
		e.js = c.job(e.tid)
	}
	e.smith = e.weight/c.estimateMs(e, now) - c.s.SmithFactor*c.ms(e.submitted)
	e.base = e.typ.tier
	e.eff, e.urgent, e.reason = e.base, false, ""
	e.idx, e.timerIdx, e.urgIdx, e.startIdx = -1, -1, -1, -1
	e.js.pending = e
	c.nPending++
	e.key.pending++
	c.setDemand(e.grp, 1, 0)
	c.stats.pendingTier[e.eff]++
	c.age(e, now)
	c.place(e)
}

// complete records the end of a running job after it held its slot for
// actual: the key's charge becomes max(estimate at admission, actual),
// the estimate learns, and jobs set aside on what it held come back.
func (c *core) complete(e *entry, actual time.Duration, now time.Time) {
	e.st = finished
	if e.js.running == e {
		e.js.running = nil
	}
	c.nRunning--
	ts := c.tiers[e.base]
	ts.running--
	c.release(ts)
	e.typ.running--
	c.release(e.typ)
	if cg := e.typ.cfg.ConflictGroup; cg != "" {
		ck := conflictKey{cg, e.tid.id}
		cf := c.conflicts[ck]
		cf.running--
		if len(cf.lot.jobs) == 0 {
			if cf.running == 0 {
				delete(c.conflicts, ck)
			}
		} else {
			c.release(cf)
		}
	}
	c.setDemand(e.grp, 0, -1)
	c.release(e.grp)
	c.starts.remove(int(e.startIdx))
	c.advance()
	k := e.key
	k.running--
	k.lastSeen = now
	secs := actual.Seconds()
	// The admission charge sticks: a job that ran longer than its
	// estimate adds the difference, one that ended sooner gets nothing
	// back, so a client whose jobs fail fast still pays for each slot it
	// was given (the fair-queuing design's "admission cost prevents DoS").
	c.recharge(k, max(secs-e.charged, 0))
	c.learn(e.js, secs, now)
}

// remove withdraws a pending job (its last waiter gave up, or the
// scheduler shuts down).
func (c *core) remove(e *entry) {
	e.js.pending = nil
	if e.st == delayed {
		c.delays.remove(int(e.timerIdx))
		c.nDelayed--
		e.st = finished
		return
	}
	c.unplace(e)
	if e.timerIdx >= 0 {
		c.timers.remove(int(e.timerIdx))
	}
	e.st = finished // a parked copy is dropped when its lot is released
	c.stats.pendingTier[e.eff]--
	c.nPending--
	c.setDemand(e.grp, -1, 0)
	e.key.pending--
}

// pendingJobs lists the jobs not yet running, retries waiting out their
// backoff included.
func (c *core) pendingJobs() []*entry {
	var out []*entry
	for _, js := range c.jobs {
		if js.pending != nil {
			out = append(out, js.pending)
		}
	}
	slices.SortFunc(out, func(a, b *entry) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// sweep forgets fairness keys idle for the TTL, and estimates not used
// for the TTL.
func (c *core) sweep(now time.Time) {
	if now.Before(c.nextSweep) {
		return
	}
	c.nextSweep = now.Add(c.s.sweepEvery())
	for name, k := range c.keys {
		if k.idle() && now.Sub(k.lastSeen) >= c.s.TTL {
			delete(c.keys, name)
		}
	}
	for id, js := range c.jobs {
		if js.pending == nil && js.running == nil && now.Sub(js.last) >= c.s.TTL {
			delete(c.jobs, id)
		}
	}
}

// wake is when dispatch next has something to do on its own: an aging
// step, the end of a retry backoff or a sweep; zero when nothing.
func (c *core) wake() time.Time {
	var t time.Time
	earliest := func(at time.Time) {
		if t.IsZero() || at.Before(t) {
			t = at
		}
	}
	if c.timers.len() > 0 {
		earliest(c.timers.top().nextAge)
	}
	if c.delays.len() > 0 {
		earliest(c.delays.top().nextAge)
	}
	if len(c.keys)+len(c.jobs) > 0 {
		earliest(c.nextSweep)
	}
	return t
}

// score is Smith's priority of a pending job at now, for the evidence.
func (c *core) score(e *entry, now time.Time) float64 {
	return e.smith + c.s.SmithFactor*c.ms(now)
}
