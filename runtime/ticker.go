package runtime

import "time"

// The ticker and the watchdog.
//
// Every Interrupt the ticker raises the attention word of each busy worker,
// so that rounds switch and deals happen even in threads that rarely spawn.
// It runs on the P that New keeps free, so it fires on time while every
// worker computes.
//
// The watchdog looks for workers whose goroutine is stuck in a thread's
// code: no pass through the scheduler (beat) for stallTicks ticks. It reads
// the processor time of the stuck goroutine's OS thread over that stretch,
// which tells a goroutine that computes (a long library call) from one that
// is blocked (a channel, a mutex) or merely descheduled by the OS:
//   - if somebody waits for the worker, its token is revoked (revoke.go):
//     threads in its banks (modeQueued), inbox or mailboxes, a request for
//     work, an idle worker that may want its spare threads, or the end of the
//     worker's round (so that a thread the OS runs slowly or not at all, a
//     demoted one beside other processes, cannot stretch its round). Waiting work therefore
//     starts within about (stallTicks+1)×Interrupt, 3 ms by default, of the
//     worker's last preemption point; threads that arrive from outside
//     (steer, takeOver) do not wait for the watchdog at all.
//   - if it has not computed for a whole round, its token is revoked whatever waits,
//     so that a thread blocked outside Await costs its worker at most a round
//     and never deadlocks the runtime.

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

// watch is what the watchdog remembers of one worker since its last beat.
type watch struct {
	beat   uint64
	holder *gor
	ticks  int   // ticks without a beat
	since  int64 // when the beat last changed
	cpu    int64 // the holder's thread processor time then
	cpuOK  bool
}

func (tk *ticker) run(rt *Runtime) {
	defer close(tk.done)
	t := time.NewTicker(rt.interrupt)
	defer t.Stop()
	ws := make([]watch, len(rt.workers))
	roundTicks := max(stallTicks, int(rt.quantum/rt.interrupt))
	for {
		select {
		case <-tk.quit:
			return
		case <-t.C:
		}
		now := rt.now()
		idle := false
		for _, w := range rt.workers {
			idle = idle || w.sleeper.Load() != nil
		}
		for i, w := range rt.workers {
			wt := &ws[i]
			if w.sleeper.Load() != nil {
				wt.ticks = 0
				continue
			}
			w.attn.Store(1)
			h := w.holder.Load()
			if h == nil {
				continue
			}
			if b := w.beat.Load(); b != wt.beat || h != wt.holder {
				wt.beat, wt.holder, wt.ticks, wt.since = b, h, 0, now
				wt.cpu, wt.cpuOK = threadCPU(h.tid.Load())
				continue
			}
			wt.ticks++
			if wt.ticks < stallTicks {
				continue
			}
			cpu, ok := threadCPU(h.tid.Load())
			computing := !ok || !wt.cpuOK || (cpu-wt.cpu)*4 > now-wt.since
			demand := idle || w.hasWork() || w.requests.Pending() || h.mode.Load()&modeQueued != 0 ||
				now >= w.roundEnd.Load()
			var v *worker
			switch {
			case demand:
				v = rt.revoke(w, h, maxRank, computing)
			case !computing && wt.ticks >= roundTicks:
				v = rt.revoke(w, h, maxRank, false)
			}
			if v != nil {
				rt.newGor().start(v)
			}
		}
	}
}

// maxRank is above every rank: revoke whatever the worker runs.
const maxRank = 1 << 30
