package sim

// The P cores, shared with detached goroutines. A goroutine whose token
// was revoked (revoke) goes on computing until its segment ends, as in the
// runtime, and on a machine with P cores it takes processor time from the
// workers. The model: each detached goroutine shares the core of the
// worker it left, the goroutines of one core served in order.
//
//   - While the worker computes, the core is split evenly between the
//     worker and the first detached goroutine: a step of the worker that
//     needs d of processor time while the detached goroutines still need D
//     takes d + min(d, D) (share). The operating system's fair scheduler
//     splits a core so between two runnable threads.
//   - While the worker sleeps, its detached goroutines get the whole core
//     (serveAsleep), until it wakes (stopServing).
//   - A revocation in the middle of a shared step gives back to the
//     detached goroutines what the rest of the step would have served them
//     (unshare), and the worker's next steps serve it.
//
// What is left out: the operating system's wake-up preemption, which runs
// a thread that has just woken first; the runtime's demotion of a detached
// thread to SCHED_IDLE after policy.StaleAfter of processor time (docs/design.md),
// after which it runs only on an idle core; and a detached goroutine's
// moving to another core. Each of these would favour the workers, so the
// model errs on the side of slower workers.

// window is a worker's step and the share of it that went to detached
// goroutines: the worker needed d of processor time from base; the core
// was split in half for 2·pay; each of done ended at base + 2·cum.
type window struct {
	base, d, pay int64
	done         []ended
}

// ended is a detached goroutine whose segment a step finished, and what
// the step had given its detached goroutines by then.
type ended struct {
	g   *vgor
	cum int64
}

// left is how much of the window's d the worker had not had by now.
func (win *window) left(now int64) int64 {
	el := max(0, now-win.base)
	return max(0, win.d-(el-min(win.pay, el/2)))
}

// share charges the worker's step, from w.base to w.t, the processor time
// its detached goroutines take meanwhile: w.t moves on by it, and every
// detached goroutine whose segment ends within the step comes back then.
func (w *vworker) share() {
	d := w.t - w.base
	var pay int64
	w.win = window{base: w.base, d: d, done: w.win.done[:0]}
	for len(w.dets) > 0 && pay < d {
		g := w.dets[0]
		p := min(g.rem, d-pay)
		pay += p
		g.rem -= p
		if g.rem > 0 {
			break
		}
		w.dets = w.dets[1:]
		g.detGen++
		w.s.clock.at(event{t: w.base + 2*pay, kind: evDetached, g: g, gen: g.detGen})
		w.win.done = append(w.win.done, ended{g, pay})
	}
	w.win.pay = pay
	if pay > 0 {
		w.t += pay
		w.uncharge(pay) // the charge from w.since counts the core's time
	}
	if g := w.g; g != nil && g.inSegment {
		g.segEnd = w.t
	}
	w.base = w.t
}

// unshare gives back, at a revocation at now, what the rest of the current
// step would have served: detached goroutines that were to come back later
// than now go back to the front of the queue with what they still need,
// and the one served last gets back its unserved part.
func (w *vworker) unshare(now int64) {
	win := &w.win
	if now >= win.base+2*win.pay {
		return
	}
	served := (now - win.base) / 2
	var back []*vgor
	prev := int64(0)
	for _, e := range win.done {
		if e.cum > served {
			e.g.detGen++ // its coming back is void
			e.g.rem = e.cum - max(prev, served)
			back = append(back, e.g)
		}
		prev = e.cum
	}
	if len(w.dets) > 0 { // the one the step's last part served
		w.dets[0].rem += win.pay - max(prev, served)
	}
	w.dets = append(back, w.dets...)
	w.uncharge(served - win.pay)
	win.pay = served
}

// uncharge takes d of processor time that detached goroutines had off the
// charge the worker's running rank will get for the step, as charge counts
// it (borrowed and recent time too, so that a borrower's budget and share
// count its own time).
func (w *vworker) uncharge(d int64) {
	if w.cur < 0 {
		return
	}
	w.cpu[w.cur] -= d
	w.used[w.cur] -= d
	w.total -= d
	if w.cur > w.primary {
		w.borrowed[w.cur] -= d
	}
}

// serveAsleep gives a sleeping worker's core to its detached goroutines in
// turn, from w.t.
func (w *vworker) serveAsleep() {
	t := w.t
	for _, g := range w.dets {
		t += g.rem
		g.detAt = t
		g.detGen++
		w.s.clock.at(event{t: t, kind: evDetached, g: g, gen: g.detGen})
	}
}

// stopServing takes the core back from the detached goroutines at at, when
// the worker wakes: those done by then come back as planned; the others
// keep what they still need, and their coming back waits for the worker's
// steps to serve it.
func (w *vworker) stopServing(at int64) {
	keep := w.dets[:0]
	for _, g := range w.dets {
		if g.detAt <= at {
			continue // its coming back stands
		}
		g.detGen++
		g.rem = min(g.rem, g.detAt-at)
		keep = append(keep, g)
	}
	clear(w.dets[len(keep):])
	w.dets = keep
}

// dropDetached takes g, which comes back, off w's queue, if it is on it.
func (w *vworker) dropDetached(g *vgor) {
	for i, x := range w.dets {
		if x == g {
			w.dets = append(w.dets[:i], w.dets[i+1:]...)
			return
		}
	}
}
