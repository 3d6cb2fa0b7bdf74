package runtime

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

// maxSpares bounds the parked spare goroutines kept per worker; a goroutine
// that finds the list full exits instead.
const maxSpares = 8

// gor is a goroutine that can hold a worker token.
type gor struct {
	rt *Runtime
	// w is the worker whose token this goroutine holds, nil while parked or
	// running an Await-ed call. Written by whoever hands over the token,
	// before the wake-up that publishes it.
	w    *worker
	wake chan struct{}
}

func (rt *Runtime) newGor() *gor {
	rt.gors.Add(1)
	return &gor{rt: rt, wake: make(chan struct{}, 1)}
}

// main is the body of every runtime goroutine: run the loop while it holds a
// token; a spare parks first until it is handed one.
func (g *gor) main() {
	defer g.rt.gors.Done()
	goexit := true
	defer func() {
		// A thread called runtime.Goexit (t.FailNow, say): this goroutine
		// dies, but its worker must not; a spare carries on.
		if goexit && g.w != nil {
			g.handOff()
		}
	}()
	g.loop()
	goexit = false
}

// park blocks until another goroutine hands this one a token (or, at
// shutdown, releases it with g.w == nil).
func (g *gor) park() { <-g.wake }

// resume hands worker w's token to g, which must be parked or about to park.
func (g *gor) resume(w *worker) {
	g.w = w
	g.wake <- struct{}{}
}

// handOff gives g's token to a spare goroutine, which runs the scheduling
// loop from now on; g no longer holds a token afterwards.
func (g *gor) handOff() {
	w := g.w
	g.w = nil
	w.setRunning(rankLoop)
	if n := len(w.spares); n > 0 {
		sp := w.spares[n-1]
		w.spares[n-1] = nil
		w.spares = w.spares[:n-1]
		sp.resume(w)
		return
	}
	sp := g.rt.newGor()
	sp.w = w
	go sp.main()
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
	if !g.rt.takeOver(g) {
		g.rt.steer(item{t: t, g: g})
		g.park()
	}
	g.w.setRunning(int(t.rank))
	g.rt.suspended.Add(-1)
}

// waitFor parks the running thread t until child, which runs elsewhere,
// finishes; the finishing worker queues t again. The token is handed on
// before t registers, so that nobody can resume t while it still holds it.
func (g *gor) waitFor(t, child *Task) {
	g.rt.suspended.Add(1)
	g.handOff()
	if !child.addWaiter(&waiter{g: g, t: t}) {
		g.rt.steer(item{t: t, g: g}) // it finished meanwhile
	}
	g.park()
	g.rt.suspended.Add(-1)
}

// run executes task t, already claimed, on g's current worker.
func (g *gor) run(t *Task) {
	t.g = g
	g.w.runDepth = t.depth
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: finish t anyway, so that joiners wake up
			t.finish(g.w)
		}
	}()
	t.body.Run(t)
	returned = true
	t.finish(g.w)
}
