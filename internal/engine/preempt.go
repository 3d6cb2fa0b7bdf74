package engine

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Preemption points and the thread operations built on them.
//
// Go cannot interrupt a goroutine for us, so every thread operation (Spawn,
// Join, Yield, Await, Sleep) is a preemption point: it loads the worker's
// attention word and counts down to a clock read. Either one sends the
// thread through checkpoint, which does the scheduler's periodic duties and
// may park the thread so that the worker runs something more urgent.

// Submit queues t, prepared with Init, as a new thread from outside the
// runtime (an ordinary goroutine). It fails with ErrClosed once Close began.
func (rt *Runtime) Submit(t *Task) error {
	// Count the thread before looking at closing, so that Close either sees
	// it or we see Close.
	rt.roots.Add(1)
	if rt.closing.Load() {
		rt.roots.Add(-1)
		return ErrClosed
	}
	t.root = true
	rt.steer(item{t: t})
	return nil
}

// point is a preemption point of the running thread t.
func (t *Task) point() {
	if g := t.g; g.due() {
		g.pass(t)
	}
}

// pass takes running thread t through the scheduler at a due preemption
// point and back to its code.
func (g *gor) pass(t *Task) {
	g.enter(t)
	g.checkpoint(t)
	g.leave()
}

// enterPoint enters the runtime from thread t's code (see revoke.go) and
// passes a preemption point there.
func (g *gor) enterPoint(t *Task) {
	g.enter(t)
	if g.due() {
		g.checkpoint(t)
	}
}

// checkpoint serves the worker's duties from inside running thread t, then
// parks t if the worker should run another priority now: the round changed,
// a higher priority is ready and may borrow, or donated work must give way.
func (g *gor) checkpoint(t *Task) {
	w := g.w
	now := w.rt.now()
	// Only the paced count brought this pass: every points went by, and
	// nobody raised the attention word or polled its way here (Wanted).
	paced := g.count <= 0 && w.attn.Load() == 0
	if paced {
		g.points += g.every
	}
	g.every = policy.Pace(g.every, now-g.passAt)
	g.count, g.passAt = g.every, now
	if paced && g.points < policy.CheckEvery && now < w.nextRound {
		// Offer the OS processor when it is time, without the duties and
		// the heartbeat, which would promote forks that nobody asked for;
		// they come every CheckEvery points as ever, and at the first pass
		// after the round's end: aligned rounds end at fixed times, so a
		// switch made late is taken from the priority whose round is next.
		w.offerOS(now)
		return
	}
	g.points, g.priv.polls = 0, policy.PollEvery
	g.heartbeat(w, now)
	w.service(now)
	if w.choose(int(t.rank), now) == int(t.rank) {
		return
	}
	w.stats.preemptions.Add(1)
	g.promoteAll(w)
	w.insert(item{t: t, g: g})
	g.handOff()
	g.park() // handOff may have chosen t itself: then the token is back at once
	w = g.w
	w.setRunning(int(t.rank))
}

// Spawn queues child, prepared with Init, as a thread forked by the running
// thread t. A child at t's priority is a lazy fork (lazy.go): it costs a
// push on the goroutine's own stack and is promoted into a bank only when
// work is wanted elsewhere. A child of another priority is a real thread at
// once, in the bank of t's worker; one of higher priority makes the worker
// reconsider at the next preemption point.
func (t *Task) Spawn(child *Task) {
	g := t.g
	child.depth = t.depth + g.nesting() + 1
	if child.rank == t.rank {
		g.lazy.push(child)
		if due := g.due(); due || g.mode.Load()&modeRevoked != 0 { // after the push: see lazy.go
			g.forked(t, due)
		}
		return
	}
	g.spawnReal(t, child, false)
}

// forked is the slow path of the preemption point of a fork that t just
// pushed on a lazy stack: it passes through the scheduler when the point is
// due, else brings back a goroutine whose token was revoked (for the shared
// stack, checking that after the push is half of the revocation protocol:
// see lazy.go). The callers test both conditions inline, so that a fork
// pays no call when neither holds.
func (g *gor) forked(t *Task, due bool) {
	if due {
		g.pass(t) // enter reattaches a revoked goroutine
		return
	}
	g.enter(t)
	g.leave()
}

// yieldOS offers the OS processor to other threads (sched_yield), then
// notes the processor the holder's thread runs on after it, and moves the
// thread off a processor another worker shares (unstack); rank is the rank
// the holder runs (policy.NoRank: none). The holder calls it from the
// scheduler (offerOS) and from thread code whose forks only counted their
// polls down (Forks.Point): code that only forks passes through the
// scheduler once an interrupt, and two workers stacked on one core handed
// it to each other at every yield of that code for as long.
func (w *worker) yieldOS(rank int) {
	osYield()
	w.cpu.Store(currentCPU()) // the yield is where the OS may have moved us
	w.unstack(rank)
}

// unstack moves the OS thread of w's holder, if another awake worker was
// last seen on the processor w was last seen on, to a processor where no
// awake worker was last seen, if the thread may run there: the holder
// calls it after a yield has refreshed w.cpu (yieldOS), running rank. Two
// workers that Linux placed on one core hand it to each other at every OS
// yield (policy.OSYieldEvery), so both look cache-hot to its balancer,
// which then left them stacked for milliseconds while the other core
// idled. Only a worker running a rank that is not below one with a share
// moves: a core that two workers of lower ranks leave free serves a thread
// of a higher rank as it wakes (an Await-ed read) without waiting for their
// yields, and promptness comes first. With more workers than processors,
// workers share cores by design, and nothing moves.
//
// Each call swaps w into its processor's slot of rt.onCPU, a cache line
// that only the workers on that processor write: two workers stacked there
// find each other in it at their next yields, and a call costs no look at
// the other workers unless it finds one. Only then does unstack read them
// all, to learn which processors are free.
func (w *worker) unstack(rank int) {
	cpu := w.cpu.Load()
	if cpu < 0 || int(cpu) >= len(w.rt.onCPU) {
		return
	}
	prev := w.rt.onCPU[cpu].w.Swap(w)
	if prev == nil || prev == w || prev.cpu.Load() != cpu || prev.sleeper.Load() != nil ||
		rank < 0 || w.rt.belowShare(rank) {
		return
	}
	var taken uint64 // the processors awake workers were last seen on
	for _, v := range w.rt.workers {
		if c := v.cpu.Load(); c >= 0 && c < 64 && v.sleeper.Load() == nil {
			taken |= 1 << c
		}
	}
	moveToFree(taken, &w.cpu)
}

// cpuSlot is a processor's entry in rt.onCPU, on a cache line of its own.
type cpuSlot struct {
	w atomic.Pointer[worker]
	_ cacheLinePad
}

// numCPU is the machine's processors, for unstack.
var numCPU = goruntime.NumCPU()

// Offer queues child, prepared with Init, as a thread forked by the running
// thread t, like Spawn, but as a real thread at once: it goes into the bank
// of t's worker, where other workers can take it. Code that makes work on
// demand uses it when Wanted says so.
func (t *Task) Offer(child *Task) {
	child.depth = t.depth + t.g.nesting() + 1
	t.g.spawnReal(t, child, child.rank == t.rank)
}

// spawnReal puts child, a fork of t, into the bank of t's worker; offered
// counts it as a promotion.
func (g *gor) spawnReal(t, child *Task, offered bool) {
	g.enter(t)
	child.state.Store(stateShared) // a real thread at once: claimed in place (claimHere)
	w := g.w
	if offered {
		w.stats.promotions.Add(1)
	}
	w.insert(item{t: child})
	if child.rank > t.rank {
		w.attn.Store(1)
	}
	if g.due() {
		g.checkpoint(t)
	}
	g.leave()
}

// Due counts a preemption point of t and reports whether the point must
// pass through the scheduler: then the caller calls Wanted. It reads no
// shared memory but the worker's attention word and inlines, so that a
// loop can poll at every iteration.
func (t *Task) Due() bool { return t.g.due() }

// Attention reports whether a preemption point of t is due because the
// worker's attention word is raised (by the ticker every interrupt, by a
// request for work, a deal, a thread of higher priority), t's token was
// revoked, or policy.PollEvery polls went by: then the caller calls Wanted. It
// reads no clock and counts on the goroutine's fork stack, so that a loop
// polling it at every iteration passes the scheduler once every 1024
// iterations at most where Due would every 64.
func (t *Task) Attention() bool { return t.g.attention() }

// attention is the poll of Attention and of forks (lazy.go).
func (g *gor) attention() bool {
	if g.w.attn.Load()|uint32(g.mode.Load()&modeRevoked) != 0 {
		return true
	}
	g.priv.polls--
	return g.priv.polls <= 0
}

// Wanted passes a preemption point that Due reported due, and reports
// whether another worker wants work of t's priority and t's worker has
// none to give: a parallel loop then offers half of its remaining range
// (see thread.For).
func (t *Task) Wanted() bool {
	g := t.g
	g.pass(t)
	if g.wanted {
		g.wanted = false
		return true
	}
	return false
}

// Join returns once child has finished. A child that has not started runs
// inline on t's goroutine; one running elsewhere parks t until it finishes. The
// caller checks priorities first: child's must be at least t's.
func (t *Task) Join(child *Task) { t.join(nil, child) }

// JoinContext is Join that gives up, returning ctx.Err(), when ctx is done
// before child finishes. A child that has not started still runs inline:
// it has the same context and sees it done.
func (t *Task) JoinContext(ctx context.Context, child *Task) error {
	if err := ctx.Err(); err != nil && !child.Done() {
		return err
	}
	if t.join(ctx, child) {
		return ctx.Err()
	}
	return nil
}

// join is Join, ending early when ctx (nil for none) is done; it reports
// whether it did.
func (t *Task) join(ctx context.Context, child *Task) (cancelled bool) {
	g := t.g
	if child.Done() {
		t.point()
		return false
	}
	if t.JoinFork(child) {
		// The common case: a lazy fork joined by its parent, most often
		// never promoted.
		g.endTaken(t, child)
		return false
	}
	g.enterPoint(t)
	if child.Done() {
		g.leave()
		return false
	}
	w := g.w
	if it, ok := w.banks[child.rank].Peek(); ok && it.t == child && it.g == nil {
		w.banks[child.rank].Remove()
	}
	if g.lazy.takeAny(child) || child.claimHere() {
		w.setRunning(int(child.rank))
		g.run(child)
		w = g.w // run may return on another worker
		w.setRunning(int(t.rank))
	} else {
		cancelled = g.waitFor(ctx, t, child)
	}
	g.leave()
	return cancelled
}

// Yield is a preemption point for threads that run long loops without other
// thread operations.
func (t *Task) Yield() { t.point() }

// Suspend runs f without holding a processor: the worker goes on with other
// threads while f blocks, and t is queued again, steered to the worker that
// can run it soonest, when f returns. A panic in f is re-raised in t once t
// holds a processor again. A thread of a top rank that finds no worker free
// when f returns runs on loose until its next point (R4, PROTOCOLS.md), and
// makes its next Suspend as it is.
func (t *Task) Suspend(f func()) {
	g := t.g
	if !g.awaitLoose(t) {
		g.enterPoint(t)
		g.suspend()
	}
	defer func() { // also when f panics: the panic goes on in t
		if g.rejoin(t, true) {
			g.leave()
		}
	}()
	Awaited(f)
}

// Sleep suspends t for at least d without holding a processor.
func (t *Task) Sleep(d time.Duration) {
	if d <= 0 {
		t.Yield()
		return
	}
	t.Suspend(func() { time.Sleep(d) })
}
