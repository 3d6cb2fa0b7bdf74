package engine

import (
	"context"
	"runtime/pprof"
	"runtime/trace"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Goroutines and processor tokens.
//
// A worker is a processor token: whichever goroutine holds it runs the
// scheduling loop or a thread for that worker, and at most Procs goroutines
// hold tokens at any time. Threads start as plain calls on the holder's
// goroutine, so a spawn costs no goroutine. When a running thread must wait
// (a Join on a thread running elsewhere, Await, Sleep, a preemption), its
// goroutine hands the token to a spare goroutine, which carries on the
// scheduling loop, and parks. The waiting thread later goes back into a bank
// as a continuation (item.g != nil); the worker that picks it hands its token
// to the parked goroutine and becomes a spare itself.
//
// The token protocol (who may touch a worker's owner state) is in
// PROTOCOLS.md, invariants T1-T3 and M1-M5.

// gor is a goroutine that can hold a worker token.
type gor struct {
	rt *Runtime
	// w is the worker whose token this goroutine holds, nil while parked or
	// running an Await-ed call. Written by whoever hands over the token,
	// before the wake-up that publishes it; read only by the goroutine itself
	// (after a revocation it still names the worker it lost, see revoke.go).
	w    *worker
	wake chan struct{}
	// mode says whether the goroutine runs scheduler or thread code, and
	// whether its token was revoked: see revoke.go.
	mode modeWord
	// detSince is when g was last revoked or loosened, for charging its processor time
	// when it comes back (whether the revocation counted it as computing
	// is in its mode word: modeBusy).
	detSince atomic.Int64
	// tid is the OS thread g is locked to (0: not locked, or not known),
	// for the ticker to demote while g computes detached; demoted says it
	// did, and detCPU is the processor time of that thread when g was
	// detached, -1 if not known (both guarded by Runtime.detached.mu; see
	// revoke.go).
	tid     atomic.Int32
	demoted bool
	detCPU  int64
	// lockSeq counts g's locks and unlocks of its OS thread, odd while it
	// holds it locked; callers that find g in locks read it (self.go).
	lockSeq atomic.Uint32
	// lowTid is the OS thread g lowered to the idle class, 0 if none:
	// stored by g, taken (swapped to 0) by whoever raises it (lower.go).
	lowTid atomic.Int32

	// Private to the goroutine and written at every fork and preemption
	// point: padded off the fields above and off neighbouring objects, so
	// that no other core's cache line moves when they change.
	_ cacheLinePad
	// count counts preemption points down to the next pass through the
	// scheduler, from every (policy.Pace); passAt is when the last pass
	// was, and points how many points went by since the last full one
	// (checkpoint).
	count  int
	every  int
	points int
	passAt int64
	// lazy and priv hold the lazy forks of the threads running on g, the
	// ones a revoker may take and the private ones (lazy.go); frames are
	// those threads, innermost last.
	lazy   lazyStack
	priv   Forks
	frames []frame
	// recycled are records of joined threads kept for the next spawns
	// (Recycled).
	recycled Recycled
	// wanted says a heartbeat found work wanted and no lazy fork to promote.
	wanted bool
	// nextYield is when forks that only counted their polls down offer the
	// OS processor next (Forks.Point).
	nextYield int64
	// label is the rank whose profiler labels the goroutine carries.
	label int
	// locked says g is locked to its OS thread (from its first passage into
	// thread code until it parks); pinned says for good, because that
	// thread was demoted and Linux refused to promote it again; caller says
	// g is the record of an ordinary goroutine in RunHere, whose OS thread
	// is never demoted (see revoke.go).
	locked, pinned, caller bool
	// lockKey is the key of the OS thread g holds locked (self.go).
	lockKey int64
	// region is the execution-trace region of the thread code it runs now,
	// while runtime/trace records (see Runtime.regions).
	region *trace.Region
	_      cacheLinePad
}

// cacheLinePad keeps what is around it on cache lines of its own (two lines:
// adjacent-line prefetching pairs them).
type cacheLinePad struct{ _ [128]byte }

// newGor makes a goroutine record that Close waits for (gors).
func (rt *Runtime) newGor() *gor {
	rt.gors.Add(1)
	return rt.record()
}

// record makes a goroutine record, parked and holding nothing.
func (rt *Runtime) record() *gor {
	g := &gor{rt: rt, wake: make(chan struct{}, 1), label: policy.NoRank, every: policy.CheckEvery}
	g.priv.init(g)
	return g
}

// start runs g's main on a new goroutine, holding w's token if w is not nil.
func (g *gor) start(w *worker) {
	if w != nil {
		g.w = w
		w.holder.Store(g)
	}
	go g.main()
}

// main is the body of every runtime goroutine: run the loop while it holds a
// token; a spare parks first until it is handed one.
func (g *gor) main() {
	defer g.rt.gors.Done()
	defer g.exit()
	goexit := true
	defer func() {
		// A thread called runtime.Goexit (t.FailNow, say): this goroutine
		// dies, but its worker must not; a spare carries on.
		if goexit && g.w != nil {
			g.abandon(g.w)
			g.handOff()
		}
	}()
	g.loop()
	goexit = false
}

// RunHere runs t, prepared with Init, as a new thread on the calling
// ordinary goroutine, if a worker sleeps or one runs lower-priority code
// that it would leave for t at its next point (takeFor, revoke.go): the
// goroutine takes that worker's token itself, runs t as the worker's
// holder (t may park and resume like any thread) and, when t has
// finished, puts the worker it holds back to sleep without waking anything
// (rest), or hands its token to a spare when work waits, and returns true.
// It returns false, having done nothing, when no worker qualifies: then
// Submit t. Called from a thread's code, it fails with ErrWaitInThread
// before anything runs.
//
// This is the idle path of thread.Run. Handing t to the sleeping worker
// instead costs two wake-ups of OS threads on the way (the worker's, then
// the caller's at the end); here it costs neither. labels are the profiler labels the goroutine gets back.
// If t calls runtime.Goexit, the calling goroutine exits, as it would
// calling it directly; the worker carries on.
func (rt *Runtime) RunHere(t *Task, labels context.Context) (bool, error) {
	if threadGor() != nil {
		return false, ErrWaitInThread
	}
	w := rt.takeFor(t.rank, true)
	if w == nil {
		return false, nil
	}
	g := w.caller()
	rt.adopt(g, w)
	// Holding a token counts in gors (Close waits for it); the thread counts
	// in roots before closing is looked at, as in Submit.
	rt.gors.Add(1)
	defer rt.gors.Done()
	rt.roots.Add(1)
	if rt.closing.Load() {
		rt.roots.Add(-1)
		g.passTo()
		return false, ErrClosed
	}
	t.root = true
	t.claim()
	returned := false
	defer func() {
		if !returned { // runtime.Goexit; run finished t
			if g.w != nil {
				g.abandon(g.w)
				g.handOff()
			}
			g.exit()
		}
		pprof.SetGoroutineLabels(labels)
	}()
	w.setRunning(int(t.rank))
	g.run(t)
	returned = true
	g.unlock() // the caller's goroutine goes back to its code unlocked
	w = g.w    // t may have ended on another worker
	if len(w.callers) < policy.MaxCallers {
		w.callers = append(w.callers, g) // with its lazy stack and fork records
	}
	g.w = nil
	if !w.rest() {
		g.w = w
		g.passTo()
	}
	return true, nil
}

// caller gives a record for an ordinary goroutine that takes w's token in
// RunHere: one that an earlier caller left, whose lazy stack and fork
// records are warm, or a new one. w's token is the caller's already.
func (w *worker) caller() *gor {
	if n := len(w.callers); n > 0 {
		g := w.callers[n-1]
		w.callers = w.callers[:n-1]
		g.label = policy.NoRank // the caller's labels are not the runtime's
		return g
	}
	g := w.rt.record()
	g.caller = true
	return g
}

// takeSleeper takes the token of a sleeping worker, if one sleeps, starting
// the scan at a rotating worker so that callers spread out; the caller
// gives it to a goroutine with adopt.
func (rt *Runtime) takeSleeper() *worker {
	ws := rt.workers
	start := int(rt.steerSeq.Add(1))
	for i := range ws {
		w := ws[(start+i)%len(ws)]
		sp := w.sleeper.Load()
		if sp == nil || !w.sleeper.CompareAndSwap(sp, nil) {
			continue
		}
		if !w.keepSpare(sp) {
			sp.resume(nil) // surplus: it exits
		}
		return w
	}
	return nil
}

// InThread reports whether the calling goroutine runs a thread's code (not
// an Await-ed call), on any runtime. Blocking calls that wait for other
// threads, such as Task.Wait, must not be made there: they hold a worker.
func InThread() bool { return threadGor() != nil }

// inThread reports whether the calling goroutine runs a thread of rt.
func (rt *Runtime) inThread() bool {
	g := threadGor()
	return g != nil && g.rt == rt
}

// threadGor is the runtime goroutine of the caller if it runs a thread's
// code, else nil; a goroutine in thread code holds its thread locked
// (invariant I1, PROTOCOLS.md).
func threadGor() *gor {
	if g := lockedSelf(); g != nil && g.mode.Load() != modeSched {
		return g
	}
	return nil
}

// park blocks until another goroutine hands this one a token (or, at
// shutdown, releases it with g.w == nil). It first lets go of its OS thread
// (see revoke.go), so that the hand-off is a cheap switch on one thread.
func (g *gor) park() {
	g.unlock()
	<-g.wake
}

// resume hands worker w's token to g, which must be parked or about to park.
func (g *gor) resume(w *worker) {
	g.w = w
	if w != nil {
		w.holder.Store(g)
	}
	g.wake <- struct{}{}
}

// spare takes a parked spare goroutine from w, if there is one.
func (w *worker) spare() *gor {
	if n := len(w.spares); n > 0 {
		sp := w.spares[n-1]
		w.spares[n-1] = nil
		w.spares = w.spares[:n-1]
		return sp
	}
	return nil
}

// keepSpare puts g, which is about to park, among w's spares; false if the
// list is full and g should end instead.
func (w *worker) keepSpare(g *gor) bool {
	if len(w.spares) >= policy.MaxSpares {
		return false
	}
	w.spares = append(w.spares, g)
	return true
}

// passTo hands g's token to a spare goroutine, or a new one, which runs the
// scheduling loop from now on. g holds no token afterwards.
func (g *gor) passTo() {
	w := g.w
	g.w = nil
	w.setRunning(policy.NoRank)
	if sp := w.spare(); sp != nil {
		sp.resume(w)
	} else {
		g.rt.newGor().start(w)
	}
}

// handOff gives g's token away; g no longer holds a token afterwards. If
// the worker's next thread is a continuation, its goroutine gets the token
// at once; else a spare carries on the scheduling loop. Going straight to
// the continuation saves a hop through a spare on every preemption for an
// urgent thread.
func (g *gor) handOff() {
	w := g.w
	it, depth, ok := w.next(0)
	switch {
	case ok && it.g != nil:
		g.w = nil
		w.setRunning(int(it.t.rank))
		it.g.resume(w)
	case ok:
		w.banks[it.t.rank].Insert(it, depth) // the youngest again: the spare picks it
		fallthrough
	default:
		g.passTo()
	}
}

// suspend takes the running thread off its processor before an Await-ed
// call: its goroutine hands the token on and lets go of its OS thread (the
// call may block: Go then runs the P on this OS thread meanwhile). The
// caller makes the call and then rejoins.
func (g *gor) suspend() {
	g.rt.suspended.Add(1)
	g.promoteAll(g.w)
	g.handOff()
	g.unlock()
}

// rejoin brings back t, whose goroutine g holds no token. With mayLoose (t
// is back from an Await-ed call), a thread of a rank that no rank with a
// share is above takes a sleeping worker's token, else runs on loose
// (loosen: held is false) rather than seize a busy worker: the seized
// holder, often in a library call, would go on detached in the normal
// class (O2) and compete for a core with the very threads the network
// wakes. Otherwise, or where loosen refuses, t takes a token at once if
// that costs nobody a wait (takeOver), else it queues its continuation and
// parks until a worker picks it up.
func (g *gor) rejoin(t *Task, mayLoose bool) (held bool) {
	rt := g.rt
	loose := mayLoose && !rt.belowShare(int(t.rank))
	switch {
	case rt.takeOver(g, t.rank, !loose): // a loose candidate asks a sleeper only
	case loose && g.loosen():
		return false
	case loose && rt.takeOver(g, t.rank, true):
	default:
		rt.steer(item{t: t, g: g})
		g.park()
	}
	g.w.setRunning(int(t.rank))
	rt.suspended.Add(-1)
	return true
}

// loosen lets the thread of g, back from an Await-ed call, run on without a
// token until its next preemption point, as a revoked goroutine does
// (invariant R4, PROTOCOLS.md), and reports whether it does: at most one
// thread per worker runs loose at a time. Queued instead, it would wait for
// a worker's next point, and beside ordinary goroutines that compute, the
// worker's OS thread waits for a core first.
func (g *gor) loosen() bool {
	rt := g.rt
	if rt.loose.Add(1) > int32(len(rt.workers)) {
		rt.loose.Add(-1)
		return false
	}
	// A worker for the attention word that the thread's points read: it
	// holds none, and its points bring it back (reattach) as soon as one
	// passes the scheduler.
	g.w = rt.workers[0]
	g.detSince.Store(rt.now())
	g.lock() // I1: before the thread mode
	g.mode.Store(modeRevoked | modeLoose)
	return true
}

// unloose ends the loose run of g's thread t: g holds no token and runs no
// thread code from here on until it rejoins (I1: the mode is modeSched
// again before the caller lets go of the OS thread). The run's time is
// charged to t's priority, so that Stats counts every thread's work.
func (g *gor) unloose(t *Task) {
	g.w.stats.cpu[t.rank].Add(g.rt.now() - g.detSince.Load())
	g.w = nil
	g.mode.Store(modeSched)
	g.rt.loose.Add(-1)
}

// awaitLoose prepares a loose goroutine for an Await-ed call, which it
// makes as it is, holding no token, and reports whether it did. A
// goroutine that is not loose, or whose thread has forks pending, which
// must not wait for the call, suspends through the scheduler instead.
func (g *gor) awaitLoose(t *Task) bool {
	if g.mode.Load()&modeLoose == 0 || g.priv.bot < g.priv.top || g.lazy.bot < g.lazy.top {
		return false
	}
	g.unloose(t)
	g.unlock()
	return true
}

// waitFor parks the running thread t until child, which runs elsewhere,
// finishes, or until ctx (nil for none) is done; it reports whether the
// wait ended by ctx. Whichever comes first queues t (waiter.woke). The
// token is handed on before t registers, so that nobody can resume t while
// it still holds it.
func (g *gor) waitFor(ctx context.Context, t, child *Task) (cancelled bool) {
	g.rt.suspended.Add(1)
	g.promoteAll(g.w)
	g.handOff()
	wt := &waiter{g: g, t: t}
	switch {
	case !child.addWaiter(wt):
		g.rt.steer(item{t: t, g: g}) // it finished meanwhile
	case ctx != nil:
		stop := context.AfterFunc(ctx, func() {
			if wt.woke.CompareAndSwap(waitPending, wokeByCancel) {
				g.rt.steer(item{t: t, g: g})
			}
		})
		defer stop()
	}
	g.park()
	g.rt.suspended.Add(-1)
	return wt.woke.Load() == wokeByCancel
}

// run executes task t, already claimed, on g's current worker. It returns in
// scheduler mode, holding a token (not necessarily the same worker's).
func (g *gor) run(t *Task) {
	t.g = g
	g.begin(t)
	k := len(g.frames) - 1 // t's frame
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: finish t anyway, so that joiners wake up
			g.exited(k)
		}
	}()
	g.leave()
	t.body.Run(t)
	returned = true
	g.enter(t)
	g.promoteOrphans(g.w)
	g.end()
	g.retire(t)
}

// exited finishes, after runtime.Goexit, the thread of frame k and the
// threads that run inline above it, innermost first, so that their joiners
// wake up, and drops their frames. The first of them to finish enters the
// scheduler as the continuation of the thread it runs inside (a frame of a
// thread that ran inline has its parent's below it). JoinFork has no
// defer of its own: a Goexit in an inline child always unwinds through the
// run that began the frames below it, which calls exited.
func (g *gor) exited(k int) {
	for i := len(g.frames) - 1; i >= k; i-- {
		if g.mode.Load() != modeSched {
			parent := i - 1
			if i == k {
				parent = k
			}
			g.enter(g.frames[parent].t)
		}
		g.retire(g.frames[i].t)
	}
	clear(g.frames[k:])
	g.frames = g.frames[:k]
}

// retire ends t, whose code has returned (or called runtime.Goexit), on
// g's worker, whose token g holds in scheduler mode. A submitted thread's
// time so far is charged to the worker first, so that Stats read after a
// Wait count it (only for those, the threads a Wait can be for: a clock
// read per fork would cost more than the fork); then finish marks t done.
func (g *gor) retire(t *Task) {
	if t.root {
		g.w.charge(g.w.rt.now())
	}
	t.finish(g.w)
}
