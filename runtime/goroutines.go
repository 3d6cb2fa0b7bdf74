package runtime

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
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
// Two classes of goroutines. Threads of priorities below the interactive
// boundary (Runtime.demotes) run on demoted goroutines: each is locked to its
// OS thread for life and that thread's nice value raised, so that the
// operating system runs Go's own threads (network poller, timers), the
// program's other goroutines and fairly's interactive threads first. Linux
// lets an unprivileged thread raise its nice value but not lower it again,
// which is why a demoted goroutine never gives its thread back. Interactive
// threads run on ordinary goroutines, locked to their thread only while they
// hold a token (so that the watchdog can read its processor time). A thread
// stays on the goroutine it started on, so it keeps its class; the loop
// hands its token to a spare of the right class before starting a thread.
//
// The token protocol (who may touch a worker's owner state) is in revoke.go.

// maxSpares bounds the parked spare goroutines kept per worker and class; a
// goroutine that finds the list full exits instead.
const maxSpares = 8

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
	mode atomic.Uint32
	// tid is the OS thread the goroutine is locked to while it holds a token
	// (0 if unknown), for the watchdog's processor-time reading.
	tid atomic.Int32
	// detBusy says a revocation counted g as computing (see revoke.go).
	detBusy atomic.Bool
	// count counts preemption points down to the next clock read.
	count   int
	demoted bool // a demoted goroutine: locked to its demoted OS thread for life
	locked  bool // locked to its OS thread now
}

func (rt *Runtime) newGor(demoted bool) *gor {
	rt.gors.Add(1)
	return &gor{rt: rt, wake: make(chan struct{}, 1), demoted: demoted && rt.demote}
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
	if g.demoted {
		goruntime.LockOSThread() // for life: the thread is demoted below
		g.lockedTo(gettid())
		demoteThread(g.rt.nice)
		defer g.lockedTo(0)
	}
	goexit := true
	defer func() {
		// A thread called runtime.Goexit (t.FailNow, say): this goroutine
		// dies, but its worker must not; a spare carries on.
		if goexit && g.w != nil {
			g.handOff()
		}
	}()
	g.acquired()
	g.loop()
	goexit = false
	g.released()
}

// acquired is called by g once it holds a token: it locks g to its OS thread
// so that the watchdog can read the thread's processor time.
func (g *gor) acquired() {
	if g.w == nil || g.locked {
		return
	}
	goruntime.LockOSThread()
	g.lockedTo(gettid())
}

// released is called by g once it gave its token away: an ordinary goroutine
// returns its thread to Go's pool; a demoted one keeps it.
func (g *gor) released() {
	if !g.locked || g.demoted {
		return
	}
	g.lockedTo(0)
	goruntime.UnlockOSThread()
}

// lockedTo records that g is locked to OS thread tid (0: unlocked now).
func (g *gor) lockedTo(tid int32) {
	if old := g.tid.Swap(tid); old != 0 {
		lockedGors.Delete(old)
	}
	g.locked = tid != 0
	if tid != 0 {
		lockedGors.Store(tid, g)
	}
}

// lockedGors maps the OS threads that runtime goroutines are locked to onto
// those goroutines, over all runtimes: only the locked goroutine runs on
// such a thread, so the calling thread tells whether the caller is one.
var lockedGors sync.Map // int32 → *gor

// InThread reports whether the calling goroutine runs a thread's code (not
// an Await-ed call), on any runtime. Blocking calls that wait for other
// threads, such as Task.Wait, must not be made there: they hold a worker.
func InThread() bool {
	tid := gettid()
	if tid == 0 {
		return false
	}
	g, ok := lockedGors.Load(tid)
	return ok && g.(*gor).mode.Load() != modeSched
}

// park blocks until another goroutine hands this one a token (or, at
// shutdown, releases it with g.w == nil).
func (g *gor) park() {
	g.released()
	<-g.wake
	g.acquired()
}

// resume hands worker w's token to g, which must be parked or about to park.
func (g *gor) resume(w *worker) {
	g.w = w
	if w != nil {
		w.holder.Store(g)
	}
	g.wake <- struct{}{}
}

// spare takes a parked spare goroutine of the given class from w, or makes
// a new one, to hand w's token to.
func (w *worker) spare(demoted bool) *gor {
	c := w.classOf(demoted)
	if n := len(w.spares[c]); n > 0 {
		sp := w.spares[c][n-1]
		w.spares[c][n-1] = nil
		w.spares[c] = w.spares[c][:n-1]
		return sp
	}
	return nil
}

// keepSpare puts g, which is about to park, among w's spares; false if the
// list is full and g should exit instead.
func (w *worker) keepSpare(g *gor) bool {
	c := w.classOf(g.demoted)
	if len(w.spares[c]) >= maxSpares {
		return false
	}
	w.spares[c] = append(w.spares[c], g)
	return true
}

func (w *worker) classOf(demoted bool) int {
	if demoted {
		return 1
	}
	return 0
}

// passTo hands g's token to a goroutine of the given class: a spare, or a
// new one. g holds no token afterwards.
func (g *gor) passTo(demoted bool) {
	w := g.w
	g.w = nil
	w.setRunning(rankLoop)
	if sp := w.spare(demoted); sp != nil {
		sp.resume(w)
	} else {
		g.rt.newGor(demoted).start(w)
	}
	g.released()
}

// handOff gives g's token away; g no longer holds a token afterwards. If
// the worker's next thread is a continuation, its goroutine gets the token
// at once; else a spare of the class that thread needs carries on the
// scheduling loop. Going straight to the continuation saves a hop through a
// spare (an OS thread switch) on every preemption for an urgent thread.
func (g *gor) handOff() {
	w := g.w
	it, depth, ok := w.next()
	switch {
	case !ok:
		g.passTo(g.demoted)
	case it.g != nil:
		g.w = nil
		w.setRunning(int(it.t.rank))
		it.g.resume(w)
		g.released()
	default:
		w.banks[it.t.rank].Insert(it, depth) // the youngest again: the spare picks it
		g.passTo(w.rt.demotes(it.t.rank))
	}
}

// switchClass makes a goroutine of the other class carry on w's loop, and
// parks g as a spare (or ends it). It reports whether g holds a token again.
func (g *gor) switchClass() bool {
	w := g.w
	keep := w.keepSpare(g)
	g.passTo(!g.demoted)
	if !keep {
		g.w = nil
		return false
	}
	g.park()
	return g.w != nil
}

// suspend takes the running thread t off its processor: its goroutine hands
// the token on, runs during (which may block; it holds no token), then
// steers t back to a worker as a continuation and parks until a worker picks
// it up. It returns once t runs again, on whichever worker that is.
func (g *gor) suspend(t *Task, during func()) {
	g.rt.suspended.Add(1)
	g.handOff()
	defer g.rejoin(t) // also when during panics: the panic goes on in t
	during()
}

// rejoin queues t's continuation and parks until it is scheduled again.
func (g *gor) rejoin(t *Task) {
	if !g.rt.takeOver(g, t.rank) {
		g.rt.steer(item{t: t, g: g})
		g.park()
	}
	g.w.setRunning(int(t.rank))
	g.rt.suspended.Add(-1)
}

// waitFor parks the running thread t until child, which runs elsewhere or
// must run on a goroutine of another class, finishes; the finishing worker
// queues t again. The token is handed on before t registers, so that nobody
// can resume t while it still holds it.
func (g *gor) waitFor(t, child *Task) {
	g.rt.suspended.Add(1)
	g.handOff()
	if !child.addWaiter(&waiter{g: g, t: t}) {
		g.rt.steer(item{t: t, g: g}) // it finished meanwhile
	}
	g.park()
	g.rt.suspended.Add(-1)
}

// run executes task t, already claimed, on g's current worker. It returns in
// scheduler mode, holding a token (not necessarily the same worker's).
func (g *gor) run(t *Task) {
	t.g = g
	g.w.runDepth = t.depth
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: finish t anyway, so that joiners wake up
			if g.mode.Load() != modeSched { // an inline child's Goexit came back already
				g.enter(t)
			}
			t.finish(g.w)
		}
	}()
	g.leave()
	t.body.Run(t)
	returned = true
	g.enter(t)
	t.finish(g.w)
}
