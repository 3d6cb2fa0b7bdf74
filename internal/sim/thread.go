package sim

import "github.com/fairlyprompt/fairly/internal/policy"

// Threads and the virtual goroutines that run them: a thread's code is its
// node's Step (work, forks, joins, more work), interpreted frame by frame
// with the runtime's lazy forks (internal/engine/lazy.go), preemption
// points and join paths (internal/engine/preempt.go, goroutines.go).

// States of a thread, as Task's claim word and done flag.
const (
	stNew     uint8 = iota // not started: whoever claims it runs it
	stClaimed              // claimed by a runner
	stDone                 // finished
)

// vtask is a thread.
type vtask struct {
	id          int64
	rank        int
	depth       int32
	node        Node
	state       uint8
	waiters     []item
	arrived     int64
	started     int64 // an interactive thread's first instruction
	finished    int64
	interactive bool
	index       int // of an interactive thread, in Result.Arrivals
}

// claim is Task.claim.
func (t *vtask) claim() bool {
	if t.state != stNew {
		return false
	}
	t.state = stClaimed
	return true
}

// Phases of a frame.
const (
	phStart    uint8 = iota // expand the node, do its work before the forks
	phSpawn                 // fork the kids but the last
	phCall                  // call the last kid directly
	phJoin                  // join the forks, youngest first
	phJoinSlow              // the rest of a Join that passed a due point
	phPost                  // work after the joins
	phEnd                   // go on with the next node, or return
)

// frame is a call in a thread's code: own frames begin a thread (run or
// run inline), the others are direct calls within one.
type frame struct {
	t       *vtask
	node    Node
	own     bool
	floor   int // lazy floor of the enclosing thread, restored at the end
	phase   uint8
	i       int
	step    Step
	spawned []*vtask
	kids    [2]Node // room for Step.Kids
}

// vgor is a goroutine: the frames of the thread it runs and its lazy stack.
type vgor struct {
	frames    []frame
	lazy      []*vtask // lazy forks; nil or claimed entries are taken
	bot       int      // lazy[:bot] holds nothing to promote
	floor     int      // forks below it are the enclosing threads'
	inSegment bool     // computing a node's work: the token may be revoked
	segEnd    int64    // when the segment ends, on the worker's clock
	segWork   int64    // the segment's processor time

	detachedFrom *vworker // the worker whose token was revoked from it
	detBusy      bool
	rem          int64  // detached: processor time its segment still needs
	detAt        int64  // detached, its worker asleep: when its segment ends
	detGen       uint32 // generation of its pending evDetached event
}

// start makes g run thread t on w.
func (g *vgor) start(w *vworker, t *vtask) {
	if t.interactive {
		t.started = w.t
	}
	g.frames = append(g.frames, frame{t: t, node: t.node, own: true, floor: g.floor})
	g.floor = len(g.lazy)
}

// segment spends d of work in the running thread's code.
func (g *vgor) segment(w *vworker, d int64) {
	g.inSegment = true
	w.s.res.Gap = max(w.s.res.Gap, d)
	w.t += d
	g.segEnd, g.segWork = w.t, d
}

// advance runs g's thread on w until it takes time, parks, is preempted or
// ends.
func (g *vgor) advance(w *vworker) {
	g.inSegment = false
	s := w.s
	for {
		k := len(g.frames) - 1
		f := &g.frames[k]
		switch f.phase {
		case phStart:
			f.step = f.node.Shape.Expand(f.node, f.kids[:0])
			f.phase, f.i, f.spawned = phSpawn, 0, f.spawned[:0]
			if f.step.Pre > 0 {
				g.segment(w, f.step.Pre)
				return
			}
		case phSpawn:
			if f.i >= len(f.step.Kids)-1 {
				f.phase = phCall
				continue
			}
			child := s.newTask(f.t.rank, f.t.depth+1, f.step.Kids[f.i])
			f.i++
			f.spawned = append(f.spawned, child)
			g.lazy = append(g.lazy, child)
			w.t += s.c.Spawn
			if g.point(w, f.t) {
				return
			}
		case phCall:
			f.phase, f.i = phJoin, len(f.spawned)-1
			if n := len(f.step.Kids); n > 0 {
				g.frames = append(g.frames, frame{t: f.t, node: f.step.Kids[n-1]})
			}
		case phJoin:
			if f.i < 0 {
				f.phase = phPost
				continue
			}
			child := f.spawned[f.i]
			if child.state == stDone {
				f.i--
				w.t += s.c.Join
				if g.point(w, f.t) {
					return
				}
				continue
			}
			if !w.due() && (g.take(child) || child.claim()) {
				f.i--
				w.t += s.c.Join
				g.runInline(child)
				continue
			}
			f.phase = phJoinSlow
			if w.due() && g.checkpoint(w, f.t) {
				return
			}
		case phJoinSlow:
			child := f.spawned[f.i]
			f.phase = phJoin
			f.i--
			if child.state == stDone {
				continue
			}
			b := &w.banks[child.rank]
			if it, ok := b.Peek(); ok && it.t == child && it.g == nil {
				b.Remove()
			}
			if g.take(child) || child.claim() {
				g.runInline(child)
				continue
			}
			// waitFor: the finisher queues the continuation again.
			g.promoteAll(w)
			child.waiters = append(child.waiters, item{t: f.t, g: g})
			w.g = nil
			w.t += s.c.Handoff
			w.dispatch()
			return
		case phPost:
			f.phase = phEnd
			if f.step.Post > 0 {
				g.segment(w, f.step.Post)
				return
			}
		case phEnd:
			if f.step.Next != nil {
				f.node, f.phase = *f.step.Next, phStart
				if f.step.Yield && g.point(w, f.t) {
					return
				}
				continue
			}
			fr := *f
			g.frames = g.frames[:k]
			if fr.own {
				g.end(w, fr)
			}
			if len(g.frames) == 0 {
				w.g = nil
				w.loop()
				return
			}
		}
	}
}

// runInline runs child, claimed or taken from the lazy stack, as a call.
func (g *vgor) runInline(child *vtask) {
	child.state = stClaimed
	g.frames = append(g.frames, frame{t: child, node: child.node, own: true, floor: g.floor})
	g.floor = len(g.lazy)
}

// end finishes the thread of own frame fr: its unjoined forks are
// promoted, joiners queued into w's banks (wakeWaiters).
func (g *vgor) end(w *vworker, fr frame) {
	for i := g.floor; i < len(g.lazy); i++ {
		g.promote(w, i)
	}
	g.lazy = g.lazy[:g.floor]
	g.bot = min(g.bot, len(g.lazy))
	g.floor = fr.floor
	t := fr.t
	t.state = stDone
	t.finished = w.t
	for _, wt := range t.waiters {
		wt.t.depth = max(wt.t.depth, t.depth) + 1
		w.insert(wt)
	}
	t.waiters = nil
	s := w.s
	switch {
	case t.interactive:
		s.res.Responses[t.index] = t.finished - t.arrived
		s.res.Waits[t.index] = t.started - t.arrived
	case t == s.kernel:
		s.done = true
	}
}

// point is a preemption point of running thread t; it reports whether t
// was preempted (then w runs something else and g is parked).
func (g *vgor) point(w *vworker, t *vtask) bool {
	return w.due() && g.checkpoint(w, t)
}

// checkpoint is gor.checkpoint: heartbeat, duties, and a switch if choose
// says t's rank should not run now.
func (g *vgor) checkpoint(w *vworker, t *vtask) bool {
	w.count = w.s.p.CheckEvery
	g.heartbeat(w)
	w.service()
	if w.choose(t.rank) == t.rank {
		return false
	}
	w.stats.preemptions++
	g.promoteAll(w)
	w.insert(item{t: t, g: g})
	w.g = nil
	w.t += w.s.c.Handoff
	w.dispatch()
	return true
}

// take is lazyStack.take: t is the youngest fork above the floor.
func (g *vgor) take(t *vtask) bool {
	i := len(g.lazy) - 1
	if i < g.floor || g.lazy[i] != t {
		return false
	}
	g.lazy = g.lazy[:i]
	for len(g.lazy) > g.floor {
		if x := g.lazy[len(g.lazy)-1]; x != nil && x.state == stNew {
			break
		}
		g.lazy = g.lazy[:len(g.lazy)-1]
	}
	g.bot = min(g.bot, len(g.lazy))
	return true
}

// promote moves lazy fork i, if still to run, into w's banks.
func (g *vgor) promote(w *vworker, i int) {
	t := g.lazy[i]
	if t == nil || t.state != stNew {
		return
	}
	g.lazy[i] = nil
	w.stats.promotions++
	w.insert(item{t: t})
}

// promoteAll is gor.promoteAll: g parks, its forks go to w's banks.
func (g *vgor) promoteAll(w *vworker) {
	for i := g.bot; i < len(g.lazy); i++ {
		g.promote(w, i)
	}
	g.bot = len(g.lazy)
}

// heartbeat is gor.heartbeat: promote the oldest lazy fork when the bank of
// its rank has no live thread.
func (g *vgor) heartbeat(w *vworker) {
	for ; g.bot < len(g.lazy); g.bot++ {
		t := g.lazy[g.bot]
		if t == nil || t.state != stNew {
			continue
		}
		if policy.Promote(len(w.s.workers), w.hasLive(t.rank)) {
			g.promote(w, g.bot)
			g.bot++
		}
		return
	}
}

// lazyLive is the watchdog's modeQueued for lazy forks.
func (g *vgor) lazyLive() bool { return g.bot < len(g.lazy) }
