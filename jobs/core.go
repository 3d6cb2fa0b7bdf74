package jobs

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tid identifies a job: its type and its id.
type tid struct {
	typ JobType
	id  string
}

type state uint8

const (
	queued  state = iota // in its band, under its group and key
	urgentQ              // in the urgent queue
	parked               // blocked by a type cap, conflict, tier cap or group cap
	running
	finished
)

// entry is one job from submission to completion.
type entry struct {
	seq    uint64
	tid    tid
	js     *jobState
	typ    *typeState
	key    *fkey
	grp    *group
	weight float64 // w of Smith's rule
	r      float64 // cost estimate in ms when enqueued
	// smith orders jobs of a key: w/r + a·(now−enq) = smith + a·now, and
	// a·now is the same for every job, so the order never changes.
	smith    float64
	enq      time.Time
	base     int
	eff      int
	urgent   bool
	urgentAt time.Time
	nextAge  time.Time
	st       state
	reason   string   // why it is parked
	from     resource // what it was last released from, while queued
	node     *keyNode
	idx      int // in node.jobs
	timerIdx int
	urgIdx   int

	// Set at admission.
	charged float64
	start   time.Time

	// Execution, owned by the Scheduler.
	run    Func
	ctx    context.Context
	cancel context.CancelFunc
	owners int // Submit calls and RunSync callers still interested
	done   chan struct{}
	err    error
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
	pending prometheus.Gauge
}

func (t *tierState) parking() *lot { return &t.lot }
func (t *tierState) free() int     { return t.cap - t.running }

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
	floor   int // slots of its exact share it is sure of
	ceil    int // slots it may hold while contending for fractions
	lot     lot // urgent jobs waiting for the group's cap or its resumption
	allocG  prometheus.Gauge
	utilG   prometheus.Gauge
}

func (g *group) parking() *lot { return &g.lot }

func (g *group) free() int {
	if g.paused {
		return 0
	}
	return g.cap - g.running
}

// fkey is a fairness key: its virtual time is charge/weight.
type fkey struct {
	name     string
	seq      uint64
	weight   float64
	charge   float64 // seconds
	vt       float64 // charge / weight, the key's virtual time
	pending  int
	running  int
	nodes    []*keyNode
	lastSeen time.Time
}

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

// resource is something a job may wait for: a tier's, type's or group's
// capacity, or a conflict id.
type resource interface {
	parking() *lot
	free() int // units a waiting job could take now
}

// lot holds the jobs set aside for a resource, in the order they were set
// aside.
type lot struct {
	jobs     []*entry
	head     int
	released bool // listed in core.released
}

func (l *lot) empty() bool { return l.head == len(l.jobs) }

// jobState is what the scheduler knows of one (type, id): its pending and
// latest running job, and its learned cost. Entries point at it, so an
// admission or a completion needs no map look-up.
type jobState struct {
	pending *entry
	running *entry
	est     float64 // seconds, valid when known
	known   bool
	last    time.Time // last use of the estimate
}

// band holds the pending, not urgent jobs of one effective tier and one
// base tier: a job counts against its base tier's cap, so a whole band
// can wait for that cap without its jobs being examined one by one.
type band struct {
	byGroup []*bandGroup // by group index
	active  []*bandGroup // groups with jobs in this band
	pending int
}

type bandGroup struct {
	g    *group
	keys indexed[*keyNode]
	pos  int // in band.active, -1 when absent
}

type keyNode struct {
	k    *fkey
	bg   *bandGroup
	jobs indexed[*entry]
	idx  int
}

// minEstimateMs keeps w/r finite for a job learned to take no time.
const minEstimateMs = 1e-3

// core is the admission state. It has no lock and no goroutine: the
// Scheduler serialises calls and runs what dispatch admits.
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
	timers    indexed[*entry]
	nPending  int
	nRunning  int
	seq       uint64
	vtime     float64
	nextSweep time.Time
	released  []resource // resources that freed while jobs wait for them

	allocDirty  bool
	allocReason AllocationReason
	alloc       allocator
	want        []share
	fair        []int // nominal shares, for the redistribution metric

	log    *slog.Logger
	m      *metrics
	events []Event
}

func newCore(s *settings, m *metrics) *core {
	now := s.Clock()
	c := &core{
		s:         s,
		epoch:     now,
		types:     make(map[JobType]*typeState),
		groups:    make(map[string]*group),
		keys:      make(map[string]*fkey),
		jobs:      make(map[tid]*jobState),
		conflicts: make(map[conflictKey]*conflict),
		nextSweep: now.Add(s.TTL / 2),
		log:       s.Logger,
		m:         m,
	}
	for _, t := range s.Tiers {
		capacity := t.Cap
		if capacity == 0 || capacity > s.Slots {
			capacity = s.Slots
		}
		c.tiers = append(c.tiers, &tierState{name: t.Name, cap: capacity, pending: m.effTier.WithLabelValues(t.Name)})
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
	}, func(e *entry, i int) { e.urgIdx = i })
	c.timers = newIndexed(func(a, b *entry) bool { return a.nextAge.Before(b.nextAge) },
		func(e *entry, i int) { e.timerIdx = i })
	return c
}

func keyLess(a, b *fkey) bool {
	if a.vt != b.vt {
		return a.vt < b.vt
	}
	return a.seq < b.seq
}

func (c *core) addGroup(name string, weight float64, minSlots, capacity int) *group {
	if capacity == 0 || capacity > c.s.Slots {
		capacity = c.s.Slots
	}
	g := &group{
		name: name, idx: len(c.glist), weight: weight, min: minSlots, cap: capacity,
		allocG: c.m.alloc.WithLabelValues(name), utilG: c.m.util.WithLabelValues(name),
	}
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

// ms is t in milliseconds since the scheduler started.
func (c *core) ms(t time.Time) float64 { return float64(t.Sub(c.epoch)) / float64(time.Millisecond) }

// job gives the state of a (type, id), making it at first sight.
func (c *core) job(id tid) *jobState {
	js, ok := c.jobs[id]
	if !ok {
		js = &jobState{}
		c.jobs[id] = js
	}
	return js
}

// estimateOf is the learned cost of e's (type, id) in seconds, or the
// type's DefaultCost at first sight.
func (c *core) estimateOf(e *entry, now time.Time) float64 {
	js := e.js
	js.last = now
	if js.known {
		return js.est
	}
	return e.typ.cfg.DefaultCost.Seconds()
}

// vmin is the current virtual time: the smallest virtual time among keys
// with queued jobs, or the last one seen when there are none. The heads
// of the (band, group) heaps hold it, so no heap over all keys is kept up
// to date at every charge.
func (c *core) vmin() float64 {
	found := false
	v := 0.0
	for _, bs := range c.bands {
		for _, b := range bs {
			for _, bg := range b.active {
				if t := bg.keys.top().k.vt; !found || t < v {
					v, found = t, true
				}
			}
		}
	}
	if found {
		c.vtime = v
	}
	return c.vtime
}

func (c *core) key(name string, now time.Time) *fkey {
	k, ok := c.keys[name]
	if !ok {
		w, ok := c.s.KeyWeights[name]
		if !ok {
			w = 1
		}
		c.seq++
		k = &fkey{name: name, seq: c.seq, weight: w}
		c.keys[name] = k
	}
	if k.pending == 0 && k.running == 0 {
		// A new or returning key starts at the current virtual time: it
		// neither banks credit from being idle nor pays for old usage.
		k.vt = c.vmin()
		k.charge = k.vt * k.weight
	}
	k.lastSeen = now
	return k
}

// enqueue adds a validated job. e has tid, typ, weight, run fields set.
func (c *core) enqueue(e *entry, grp string, key string, now time.Time) {
	c.seq++
	e.seq = c.seq
	e.grp = c.group(grp)
	e.key = c.key(key, now)
	e.enq = now
	e.js = c.job(e.tid)
	e.r = max(c.estimateOf(e, now)*1000, minEstimateMs)
	e.smith = e.weight/e.r - c.s.SmithFactor*c.ms(now)
	e.base = e.typ.tier
	e.eff = e.base
	e.idx, e.timerIdx, e.urgIdx = -1, -1, -1
	e.js.pending = e
	c.nPending++
	e.key.pending++
	c.setDemand(e.grp, 1, 0)
	c.age(e, now)
	c.tiers[e.eff].pending.Inc()
	c.place(e)
}

// level is how far e has aged at now: its base tier plus one per
// interval after the grace period (not capped), and when it next steps.
func (c *core) level(e *entry, now time.Time) (lvl int, next time.Time) {
	a := c.s.Aging
	if a.Interval == 0 {
		return e.base, time.Time{}
	}
	steps := 0
	if w := now.Sub(e.enq) - a.Grace; w >= a.Interval {
		steps = int(w / a.Interval)
	}
	return e.base + steps, e.enq.Add(a.Grace + time.Duration(steps+1)*a.Interval)
}

// age brings e's effective tier and urgency up to date and re-arms its
// promotion timer. It reports whether anything changed.
func (c *core) age(e *entry, now time.Time) bool {
	lvl, next := c.level(e, now)
	eff := e.base
	if lvl > eff {
		eff = min(lvl, max(c.s.ceiling, e.base))
	}
	urgent := c.s.Aging.Urgent > 0 && lvl >= c.s.Aging.Urgent
	changed := eff != e.eff || urgent != e.urgent
	if urgent && !e.urgent {
		// When it became urgent, not when we noticed: the urgent queue is
		// first come, first served, and that is what bounds the wait.
		e.urgentAt = e.enq
		if lvl > e.base {
			e.urgentAt = e.enq.Add(c.s.Aging.Grace + time.Duration(c.s.Aging.Urgent-e.base)*c.s.Aging.Interval)
		}
	}
	if changed && (e.idx >= 0 || e.urgIdx >= 0) {
		c.unplace(e)
	}
	if eff != e.eff {
		c.tiers[e.eff].pending.Dec()
		c.tiers[eff].pending.Inc()
	}
	e.eff, e.urgent = eff, urgent
	if e.timerIdx >= 0 {
		c.timers.remove(e.timerIdx)
	}
	if !next.IsZero() && !urgent && (eff < c.s.ceiling || c.s.Aging.Urgent > 0) {
		e.nextAge = next
		c.timers.push(e)
	}
	return changed
}

// promote applies every aging step that is due.
func (c *core) promote(now time.Time) {
	for c.timers.len() > 0 && !c.timers.top().nextAge.After(now) {
		e := c.timers.top()
		oldEff, wasUrgent := e.eff, e.urgent
		if !c.age(e, now) {
			continue
		}
		steps := e.eff - oldEff
		if e.urgent && !wasUrgent {
			steps++
		}
		c.m.promotions.Add(float64(steps))
		c.events = append(c.events, Event{
			Kind: EventAged, Time: now, Type: e.tid.typ, ID: e.tid.id,
			BaseTier: c.tiers[e.base].name, EffectiveTier: c.tiers[e.eff].name,
			Urgent: e.urgent, Wait: now.Sub(e.enq),
		})
		if e.st != parked {
			c.place(e)
		}
	}
}

// place puts a pending job where dispatch looks for it.
func (c *core) place(e *entry) {
	if e.urgent {
		e.st = urgentQ
		c.urgent.push(e)
		return
	}
	e.st = queued
	b := c.bands[e.eff][e.base]
	for len(b.byGroup) <= e.grp.idx {
		b.byGroup = append(b.byGroup, nil)
	}
	bg := b.byGroup[e.grp.idx]
	if bg == nil {
		bg = &bandGroup{g: e.grp, pos: -1, keys: newIndexed(func(a, b *keyNode) bool { return keyLess(a.k, b.k) },
			func(n *keyNode, i int) { n.idx = i })}
		b.byGroup[e.grp.idx] = bg
	}
	var node *keyNode
	for _, n := range e.key.nodes {
		if n.bg == bg {
			node = n
			break
		}
	}
	if node == nil {
		node = &keyNode{k: e.key, bg: bg, jobs: newIndexed(entryLess, func(e *entry, i int) { e.idx = i })}
		e.key.nodes = append(e.key.nodes, node)
		bg.keys.push(node)
	}
	e.node = node
	node.jobs.push(e)
	if bg.pos < 0 {
		bg.pos = len(b.active)
		b.active = append(b.active, bg)
	}
	b.pending++
}

func entryLess(a, b *entry) bool {
	if a.smith != b.smith {
		return a.smith > b.smith
	}
	return a.seq < b.seq
}

// unplace takes a pending job out of the band or urgent queue.
func (c *core) unplace(e *entry) {
	if e.urgIdx >= 0 {
		c.urgent.remove(e.urgIdx)
		return
	}
	if e.idx < 0 {
		return
	}
	node := e.node
	node.jobs.remove(e.idx)
	e.node = nil
	b := c.bands[e.eff][e.base]
	b.pending--
	if node.jobs.len() > 0 {
		return
	}
	bg := node.bg
	bg.keys.remove(node.idx)
	ns := node.k.nodes
	for i, n := range ns {
		if n == node {
			ns[i] = ns[len(ns)-1]
			ns[len(ns)-1] = nil
			node.k.nodes = ns[:len(ns)-1]
			break
		}
	}
	if bg.keys.len() == 0 {
		last := b.active[len(b.active)-1]
		b.active[bg.pos] = last
		last.pos = bg.pos
		b.active = b.active[:len(b.active)-1]
		bg.pos = -1
	}
}

// park sets a blocked job aside until the resource it waits for frees.
// It keeps aging meanwhile. A job released from another resource and
// blocked here instead hands that resource's unit on to the next job
// waiting for it.
func (c *core) park(e *entry, r resource, reason string, now time.Time) {
	c.unplace(e)
	if e.from != nil && e.from != r {
		c.release(e.from)
	}
	e.from = nil
	e.st = parked
	e.reason = reason
	l := r.parking()
	l.jobs = append(l.jobs, e)
	c.skip(e, reason, now)
}

// release notes that r may have room for the jobs waiting for it.
func (c *core) release(r resource) {
	if l := r.parking(); !l.released && !l.empty() {
		l.released = true
		c.released = append(c.released, r)
	}
}

// unpark brings back, for each released resource, as many waiting jobs as
// it has free units, oldest first, so a release costs O(log n) per job
// that can use it rather than per job waiting. It reports whether any
// came back.
func (c *core) unpark() bool {
	back := false
	for _, r := range c.released {
		l := r.parking()
		for n := r.free(); n > 0 && !l.empty(); {
			e := l.jobs[l.head]
			l.jobs[l.head] = nil
			l.head++
			if e.st != parked { // withdrawn meanwhile
				continue
			}
			e.reason = ""
			e.from = r
			c.place(e)
			back = true
			n--
		}
		if l.head > len(l.jobs)/2 { // reclaim the front
			n := copy(l.jobs, l.jobs[l.head:])
			clear(l.jobs[n:])
			l.jobs, l.head = l.jobs[:n], 0
		}
		l.released = false
		if cf, ok := r.(*conflict); ok && cf.running == 0 && l.empty() {
			delete(c.conflicts, cf.key)
		}
	}
	c.released = c.released[:0]
	return back
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

// reallocate recomputes every group's slot allocation.
func (c *core) reallocate(now time.Time) {
	c.want = resize(c.want, len(c.glist))
	for i, g := range c.glist {
		g.limit = c.limit(g)
		c.want[i] = share{weight: g.weight, min: g.min, limit: g.limit}
	}
	alloc, exact := c.alloc.allocate(c.s.Slots, c.want)
	if c.allocReason != 0 || len(c.fair) != len(c.glist) {
		// The nominal shares depend on weights, caps and pauses only.
		nominal := make([]share, len(c.glist))
		for i, g := range c.glist {
			if !g.paused {
				nominal[i] = share{weight: g.weight, min: g.min, limit: g.cap}
			}
		}
		var a allocator
		c.fair, _ = a.allocate(c.s.Slots, nominal)
	}
	fair := c.fair
	redistributed := 0
	for i, g := range c.glist {
		g.floor = int(math.Floor(exact[i] + eps))
		g.ceil = int(math.Ceil(exact[i] - eps))
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
		g.allocG.Set(float64(g.alloc))
		c.utilisation(g)
		redistributed += max(0, alloc[i]-fair[i])
	}
	c.m.redistributed.Add(float64(redistributed))
	c.allocDirty, c.allocReason = false, 0
}

func (c *core) utilisation(g *group) {
	if g.alloc == 0 {
		g.utilG.Set(0)
		return
	}
	g.utilG.Set(float64(g.running) / float64(g.alloc))
}

// dispatch admits jobs while slots are free and returns them in order.
func (c *core) dispatch(now time.Time) []*entry {
	c.promote(now)
	c.sweep(now)
	if c.stale() {
		c.reallocate(now)
	}
	var out []*entry
	c.unpark()
	for c.nRunning < c.s.Slots {
		e := c.pickUrgent(now)
		for pass := passFloor; e == nil && pass <= passBorrow; pass++ {
			e = c.pick(now, pass)
		}
		if e == nil {
			// Jobs blocked on the way may have handed units on.
			if c.unpark() {
				continue
			}
			break
		}
		c.admit(e, now)
		out = append(out, e)
	}
	return out
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

// pickUrgent takes the longest-urgent job that passes its checks. Urgent
// jobs skip the group allocation but not a paused group or its cap.
func (c *core) pickUrgent(now time.Time) *entry {
	for c.urgent.len() > 0 {
		e := c.urgent.top()
		reason, r := c.blocked(e)
		if reason == "" {
			switch g := e.grp; {
			case g.paused:
				reason, r = "group paused", g
			case g.running >= g.cap:
				reason, r = "group cap", g
			}
		}
		if reason == "" {
			c.urgent.pop()
			return e
		}
		c.park(e, r, reason, now)
	}
	return nil
}

// Passes of pick: what counts as a free slot of a group.
const (
	passFloor  = iota // below the whole slots of its exact share
	passCeil          // below its share rounded up: fractions are contended
	passBorrow        // below its cap: slots nobody else can use now
)

// room is what a group may hold in a pass.
func (g *group) room(pass int) int {
	switch pass {
	case passFloor:
		return g.floor
	case passCeil:
		return g.ceil
	}
	return g.cap
}

// pick finds the next job by the ordering: the highest effective tier
// with a candidate; in it, among groups with a free slot in this pass and
// jobs whose base tier has room, the key with the smallest virtual time;
// in that key, the best job by Smith's rule. A job failing its type cap or
// conflict check is parked and the search goes on.
func (c *core) pick(now time.Time, pass int) *entry {
	for t := len(c.bands) - 1; t >= 0; t-- {
		for {
			var best *keyNode
			for base, b := range c.bands[t] {
				if b.pending == 0 {
					continue
				}
				if ts := c.tiers[base]; ts.running >= ts.cap {
					c.skipBand(ts, b, now)
					continue
				}
				for _, bg := range b.active {
					g := bg.g
					if g.paused || g.running >= g.room(pass) {
						c.skipGroup(t, g, pass, now)
						continue
					}
					if n := bg.keys.top(); best == nil || nodeLess(n, best) {
						best = n
					}
				}
			}
			if best == nil {
				break
			}
			e := best.jobs.top()
			if reason, r := c.blocked(e); reason != "" {
				c.park(e, r, reason, now)
				continue
			}
			c.unplace(e)
			return e
		}
	}
	return nil
}

// nodeLess orders candidates: by key, then, for one key present under
// several base tiers, by Smith's rule.
func nodeLess(a, b *keyNode) bool {
	if a.k != b.k {
		return keyLess(a.k, b.k)
	}
	return entryLess(a.jobs.top(), b.jobs.top())
}

func (c *core) admit(e *entry, now time.Time) {
	e.st = running
	e.from = nil
	e.start = now
	if e.timerIdx >= 0 {
		c.timers.remove(e.timerIdx)
	}
	c.tiers[e.eff].pending.Dec()
	e.js.pending, e.js.running = nil, e
	c.nPending--
	c.nRunning++
	c.tiers[e.base].running++
	e.typ.running++
	if cg := e.typ.cfg.ConflictGroup; cg != "" {
		ck := conflictKey{cg, e.tid.id}
		cf := c.conflicts[ck]
		if cf == nil {
			cf = &conflict{key: ck}
			c.conflicts[ck] = cf
		}
		cf.running++
	}
	c.setDemand(e.grp, -1, 1)
	c.utilisation(e.grp)
	k := e.key
	k.pending--
	k.running++
	k.lastSeen = now
	e.charged = c.estimateOf(e, now)
	c.recharge(k, e.charged)
	c.m.wait.Observe(now.Sub(e.enq).Seconds())
	c.evidence(e, now)
}

// recharge adds d seconds to a key's charge and restores the heaps that
// order by it.
func (c *core) recharge(k *fkey, d float64) {
	k.charge += d
	k.vt = k.charge / k.weight
	for _, n := range k.nodes {
		n.bg.keys.fix(n.idx)
	}
}

// complete records the end of a running job after it held its slot for
// actual: the key's charge is corrected by actual − estimate, the
// estimate learns, and jobs parked on what it held come back.
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
		if cf.lot.empty() {
			if cf.running == 0 {
				delete(c.conflicts, ck)
			}
		} else {
			c.release(cf)
		}
	}
	c.setDemand(e.grp, 0, -1)
	c.utilisation(e.grp)
	c.release(e.grp)
	k := e.key
	k.running--
	k.lastSeen = now
	secs := actual.Seconds()
	c.recharge(k, secs-e.charged)
	js := e.js
	if !js.known {
		js.est, js.known = e.typ.cfg.DefaultCost.Seconds(), true
	}
	js.est = c.s.Alpha*secs + (1-c.s.Alpha)*js.est
	js.last = now
}

// remove withdraws a pending job (its last waiter gave up).
func (c *core) remove(e *entry) {
	c.unplace(e)
	if e.from != nil {
		c.release(e.from) // the unit it was brought back for goes to the next
	}
	if e.timerIdx >= 0 {
		c.timers.remove(e.timerIdx)
	}
	e.st = finished // a parked copy is dropped when its lot is released
	c.tiers[e.eff].pending.Dec()
	e.js.pending = nil
	c.nPending--
	c.setDemand(e.grp, -1, 0)
	e.key.pending--
}

// sweep forgets fairness keys idle for the TTL, and estimates not used
// for the TTL.
func (c *core) sweep(now time.Time) {
	if now.Before(c.nextSweep) {
		return
	}
	c.nextSweep = now.Add(c.s.TTL / 2)
	for name, k := range c.keys {
		if k.pending == 0 && k.running == 0 && now.Sub(k.lastSeen) >= c.s.TTL {
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
// step or a sweep; zero when nothing.
func (c *core) wake() time.Time {
	var t time.Time
	if c.timers.len() > 0 {
		t = c.timers.top().nextAge
	}
	if len(c.keys)+len(c.jobs) > 0 && (t.IsZero() || c.nextSweep.Before(t)) {
		t = c.nextSweep
	}
	return t
}

// score is Smith's priority of a pending job at now, for the evidence.
func (c *core) score(e *entry, now time.Time) float64 {
	return e.smith + c.s.SmithFactor*c.ms(now)
}
