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
// Goroutines that hold a token are locked to their OS thread while they
// hold it, so that the watchdog can read the thread's processor time and
// demote it (revoke.go); they unlock when they give the token away, so a
// blocked thread costs no OS thread. The one exception is a *sunk*
// goroutine: detached from its worker while it ran a thread below the
// interactive priority, its OS thread was demoted, and since Linux lets an
// unprivileged thread raise its nice value but never lower it again, it
// keeps that thread for life and ends (taking the thread with it) once its
// own thread is done.
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
	// sunk says a revoker demoted g's OS thread (set before the revocation's
	// swap, see revoke.go): g keeps the thread locked for life.
	sunk atomic.Bool
	// count counts preemption points down to the next clock read.
	count  int
	locked bool // locked to its OS thread now
}

func (rt *Runtime) newGor() *gor {
	rt.gors.Add(1)
	return &gor{rt: rt, wake: make(chan struct{}, 1)}
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
	id := goid()
	runtimeGors.Store(id, g)
	defer runtimeGors.Delete(id) // a sunk goroutine ends locked: its thread ends with it
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

// released is called by g once it gave its token away: it returns its
// thread to Go's pool, unless the thread was demoted.
func (g *gor) released() {
	if !g.locked || g.sunk.Load() {
		return
	}
	g.lockedTo(0)
	goruntime.UnlockOSThread()
}

// lockedTo records that g is locked to OS thread tid (0: unlocked now).
func (g *gor) lockedTo(tid int32) {
	g.tid.Store(tid)
	g.locked = tid != 0
}

// runtimeGors maps the ids of the runtime's goroutines, over all runtimes,
// onto them. Goroutine ids are never reused, so an entry cannot mistake
// another goroutine for one of ours.
var runtimeGors sync.Map // uint64 → *gor

// goid is the calling goroutine's id, read from the header of its stack
// trace ("goroutine 123 [running]:"): a few microseconds, for misuse checks
// on blocking calls only.
func goid() uint64 {
	var buf [40]byte
	b := buf[:goruntime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// InThread reports whether the calling goroutine runs a thread's code (not
// an Await-ed call), on any runtime. Blocking calls that wait for other
// threads, such as Task.Wait, must not be made there: they hold a worker.
func InThread() bool {
	g, ok := runtimeGors.Load(goid())
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
// list is full (or g is sunk) and g should end instead.
func (w *worker) keepSpare(g *gor) bool {
	if len(w.spares) >= maxSpares || g.sunk.Load() {
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
	w.setRunning(rankLoop)
	if sp := w.spare(); sp != nil {
		sp.resume(w)
	} else {
		g.rt.newGor().start(w)
	}
	g.released()
}

// handOff gives g's token away; g no longer holds a token afterwards. If
// the worker's next thread is a continuation, its goroutine gets the token
// at once; else a spare carries on the scheduling loop. Going straight to
// the continuation saves a hop through a spare on every preemption for an
// urgent thread.
func (g *gor) handOff() {
	w := g.w
	it, depth, ok := w.next()
	switch {
	case ok && it.g != nil:
		g.w = nil
		w.setRunning(int(it.t.rank))
		it.g.resume(w)
		g.released()
	case ok:
		w.banks[it.t.rank].Insert(it, depth) // the youngest again: the spare picks it
		fallthrough
	default:
		g.passTo()
	}
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

// waitFor parks the running thread t until child, which runs elsewhere (or
// must not run inline on a sunk goroutine), finishes; the finishing worker
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
