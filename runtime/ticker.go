package runtime

import "time"

// The ticker and the watchdog.
//
// Every Interrupt the ticker raises the attention word of each busy worker,
// so that rounds switch and deals happen even in threads that rarely spawn.
// It runs on the P that New keeps free, so it fires on time while every
// worker computes.
//
// The watchdog handles threads that never reach a preemption point. A busy
// worker whose beat (passes through the scheduler) has not moved for
// stallTicks ticks is marked stalled: steering avoids it from then on, and
// threads already queued in its inbox move to a rescue worker, a temporary
// extra worker on its own goroutine that runs them (and what they spawn) and
// then retires, while Go's scheduler time-slices it with the stalled one.
// Waiting work therefore starts within about (stallTicks+1)×Interrupt,
// 3 ms by default, of a worker's last preemption point.

const stallTicks = 2

type ticker struct {
	done chan struct{}
	quit chan struct{}
}

func startTicker(rt *Runtime) *ticker {
	tk := &ticker{done: make(chan struct{}), quit: make(chan struct{})}
	go tk.run(rt)
	return tk
}

func (tk *ticker) stop() {
	close(tk.quit)
	<-tk.done
}

func (tk *ticker) run(rt *Runtime) {
	defer close(tk.done)
	t := time.NewTicker(rt.interrupt)
	defer t.Stop()
	beats := make([]uint64, len(rt.workers))
	still := make([]int, len(rt.workers))
	for {
		select {
		case <-tk.quit:
			return
		case <-t.C:
		}
		for i, w := range rt.workers {
			if w.sleeper.Load() != nil {
				still[i] = 0
				continue
			}
			w.attn.Store(1)
			b := w.beat.Load()
			if b != beats[i] {
				beats[i], still[i] = b, 0
				continue
			}
			still[i]++
			if still[i] >= stallTicks {
				w.stalled.Store(true)
				rt.rescue(w)
			}
		}
	}
}

// rescue moves the threads waiting in stalled worker w's inbox to a new
// rescue worker.
func (rt *Runtime) rescue(w *worker) {
	its := w.inbox.take(nil)
	if len(its) == 0 {
		return
	}
	rw := newWorker(rt, -1, uint64(rt.now())|1)
	rw.rescue = true
	rw.primary = len(rt.ranks) - 1
	for _, it := range its {
		rw.inbox.push(it)
	}
	rt.rescues.Add(1)
	w.stats.rescues.Add(1)
	g := rt.newGor()
	g.w = rw
	go g.main()
}
