package engine

import (
	goruntime "runtime"
	"time"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// The ticker and the watchdog.
//
// Every Interrupt the ticker raises the attention word of each busy worker,
// so that rounds switch and deals happen even in threads that rarely spawn.
// It runs on the P that New keeps free (procs.go), so it fires on time
// while every worker computes.
//
// The watchdog looks for workers whose goroutine is stuck in a thread's
// code: no pass through the scheduler (beat) for policy.StallTicks ticks.
//   - If somebody waits for the worker, its token is revoked (revoke.go):
//     threads in its banks (modeQueued), inbox or mailboxes, a request for
//     work, an idle worker that may want its spare threads, or the end of the
//     worker's round. Waiting work therefore starts within about
//     (policy.StallTicks+1)×Interrupt, 3 ms by default, of the worker's last
//     preemption point; threads that arrive from outside (steer, takeOver)
//     do not wait for the watchdog at all.
//   - After a whole round its token is revoked whatever waits, so that a
//     thread blocked outside Await costs its worker at most a round and a
//     tick, and never deadlocks the runtime.
//   - Whether the stuck goroutine computes or blocks decides what its
//     detached thread costs (a P, a core). Where Linux tells the processor
//     time of its OS thread (threadCPU), the watchdog reads it every tick
//     of a stall: a thread that ran an eighth of the time or more, or that
//     is runnable (state R) when it looks, computes.
//     Elsewhere it guesses: computing if somebody waits, blocked if a round
//     went by unasked. A computing detached thread is demoted after
//     policy.StaleAfter (revoke.go).
//
// The ticker also keeps a P free for wake-ups (procs.go): each tick it
// counts the goroutines that compete for Ps beside its workers, the
// program's own and threads detached from their worker, and asks for the
// Ps they need. Another goroutine (adjust) applies the change: Go's
// GOMAXPROCS waits for a collection in progress to end, tens of
// milliseconds when library calls allocate as they start, and the watchdog
// must not stop watching meanwhile.

type ticker struct {
	done  chan struct{}
	quit  chan struct{}
	ps    chan psWant   // extra Ps and slices wanted, the latest only; to adjust
	psEnd chan struct{} // closed when adjust has returned
	fit   psFit         // the ticker's (procs.go)
	sched *schedSample  // the ticker's
	gc    collector     // the ticker's (revoke.go, demotion)
	// own is the streak of ticks that saw the program's own goroutines
	// need Ps (they compete while it lasts), crowd that of ticks that saw
	// more computing goroutines than processors; wish is what the ticker
	// last asked adjust for. The ticker's.
	own, crowd streak
	wish       psWant
}

// streak tells whether a condition seen at the ticks has held at every
// tick for policy.OthersFor, and stays on a calm window after it last did.
type streak struct {
	since int64 // since when every tick saw the condition; -1: the last did not
	until int64 // when the streak stops counting
}

func newStreak() streak { return streak{since: -1} }

// see records whether the condition held at the tick at now.
func (s *streak) see(holds bool, now int64) {
	switch {
	case !holds:
		s.since = -1
	case s.since < 0:
		s.since = now
	case now-s.since >= int64(policy.OthersFor):
		s.hold(now)
	}
}

// hold keeps the streak on for a calm window from now.
func (s *streak) hold(now int64) { s.until = now + int64(policy.CalmWindow) }

// on reports whether the streak counts at now.
func (s *streak) on(now int64) bool { return now < s.until }

// psWant is what the ticker asks adjust for: extra Ps beyond the workers,
// whether the process's threads should have short time slices because
// others compete for the Ps (short) or because the collector runs (gc),
// and whether the processors should be kicked (kick_linux.go).
type psWant struct {
	extra           int
	short, gc, kick bool
}

func startTicker(rt *Runtime) *ticker {
	tk := &ticker{done: make(chan struct{}), quit: make(chan struct{}), ps: make(chan psWant, 1), psEnd: make(chan struct{}),
		fit: newPsFit(), sched: newSchedSample(), gc: newCollector(), own: newStreak(), crowd: newStreak()}
	go tk.run(rt)
	go tk.adjust(rt)
	return tk
}

// adjust keeps rt.extraPs Ps reserved beyond the workers, the short time
// slices while threads of the normal class compete for the cores
// (rt.compete, procs.go, P4), and the kicks while they outnumber the cores
// (rt.kicking, P6), as the ticker asks, until the ticker stops;
// Close then owns both (it reads them after psEnd is closed) and releases
// them.
func (tk *ticker) adjust(rt *Runtime) {
	defer close(tk.psEnd)
	inForce := false // extra Ps are in force (reserveP)
	for {
		select {
		case <-tk.quit:
			return
		case want := <-tk.ps:
			if d := want.extra - rt.extraPs; d != 0 {
				rt.hold() // a change stops the world (O3)
				inForce = reserveP(d)
				rt.release()
				rt.extraPs = want.extra
			}
			if compete := rt.demote && (want.short && inForce || want.gc); compete != rt.compete {
				rt.competing(compete)
			}
			if kicks := want.kick && rt.compete; kicks != rt.kicking {
				rt.kicking = kicks
				kick(kicks)
			}
		}
	}
}

// ask passes what the ticker wants to adjust without waiting: a request
// that adjust has not taken yet is replaced.
func (tk *ticker) ask(w psWant) {
	select {
	case <-tk.ps:
	default:
	}
	tk.wish = w
	tk.ps <- w // only the ticker sends, and the buffer is empty now
}

func (tk *ticker) stop() {
	close(tk.quit)
	<-tk.done
	<-tk.psEnd
}

// watch is what the watchdog remembers of one worker since its last beat.
type watch struct {
	beat   uint64
	holder *gor
	ticks  int // ticks without a beat
	// cpu is the processor time of the holder's OS thread at the last tick
	// (-1: not known), at is when it was read: whether the holder computes
	// or blocks shows in how much of the tick its thread ran.
	cpu, at int64
}

// computing samples the processor time of h's OS thread at now and reports
// whether the thread computes: it ran 1/policy.ComputingFraction of the time since the
// previous sample or more, or it is runnable now (on a machine that other
// processes keep busy, a computing thread may get less). A blocked
// goroutine's locked thread sleeps in the kernel and runs next to nothing.
// known is false if either sample is missing (no thread id, another OS).
func (wt *watch) computing(h *gor, now int64) (busy, known bool) {
	tid := h.tid.Load()
	cpu := threadCPU(tid)
	prev, at := wt.cpu, wt.at
	wt.cpu, wt.at = cpu, now
	if cpu < 0 || prev < 0 {
		return false, false
	}
	return policy.ComputingFraction*(cpu-prev) >= now-at || threadRunnable(tid), true
}

// look is the watchdog's look at worker w at a tick at now: it raises the
// attention of a worker that does not sleep, counts the ticks its holder
// passed no preemption point, and decides about a stall (policy.Watchdog,
// policy.Measured) and the rank to revoke below (policy.WatchdogBelow).
// idle says some worker sleeps. It returns the holder it looked at, with
// the verdict; the caller revokes.
func (wt *watch) look(w *worker, idle bool, now int64, roundTicks int) (h *gor, verdict policy.Verdict, below int32) {
	if w.sleeper.Load() != nil {
		wt.ticks = 0
		return nil, policy.Wait, 0
	}
	w.attn.Store(1)
	h = w.holder.Load()
	if h == nil {
		return nil, policy.Wait, 0
	}
	if b := w.beat.Load(); b != wt.beat || h != wt.holder {
		wt.beat, wt.holder, wt.ticks, wt.cpu = b, h, 0, -1
		return h, policy.Wait, 0
	}
	wt.ticks++
	computing, known := wt.computing(h, now)
	if wt.ticks < policy.StallTicks {
		return h, policy.Wait, 0
	}
	m := h.mode.Load()
	demand := idle || w.hasWork() || w.requests.Pending() || m&modeQueued != 0 || now >= w.roundEnd.Load()
	// RevokeBlocked: nobody waits, but a round went by; it is blocked,
	// most likely, and costs no processor detached. Where the processor
	// time of its OS thread is known, that tells.
	verdict = policy.Measured(policy.Watchdog(wt.ticks, roundTicks, demand), known, computing)
	if verdict == policy.Wait {
		return h, verdict, 0
	}
	return h, verdict, int32(policy.WatchdogBelow(int(w.waitingTop(m)), int(w.running.Load())))
}

func (tk *ticker) run(rt *Runtime) {
	defer close(tk.done)
	t := time.NewTicker(rt.interrupt)
	defer t.Stop()
	// poke runs only while policy.Poke holds, between ticks.
	poke := time.NewTicker(rt.dealEvery)
	poke.Stop()
	defer poke.Stop()
	fast := rt.dealEvery < rt.interrupt
	ws := make([]watch, len(rt.workers))
	roundTicks := policy.RoundTicks(int64(rt.quantum), int64(rt.interrupt))
	for {
		select {
		case <-tk.quit:
			return
		case <-poke.C:
			if !pokeBusy(rt) {
				poke.Stop()
			}
			continue
		case <-t.C:
		}
		now := rt.now()
		asleep, awake := rt.sleeping()
		idle, busy := asleep > 0, awake > 0
		if fast && policy.Poke(idle, busy) {
			poke.Reset(rt.dealEvery)
		} else {
			poke.Stop()
		}
		for i, w := range rt.workers {
			h, verdict, below := ws[i].look(w, idle, now, roundTicks)
			if ws[i].ticks > 0 {
				w.raiseStuck() // O4: a tick without a pass through the scheduler
			}
			if verdict != policy.Wait {
				if v := rt.revoke(w, h, below, verdict == policy.RevokeBusy); v != nil {
					v.stats.rescues.Add(1)
					rt.newGor().start(v)
				}
			}
		}
		collecting := tk.gc.active(now)
		long := 0
		if rt.demote && rt.detBusy.Load() > 0 {
			long = rt.detached.demote(now, collecting)
		}
		rt.lower(collecting || tk.own.on(now), now)
		tk.fitPs(rt, long, collecting, awake)
	}
}

// pokeBusy raises the attention of every worker that computes, if
// policy.Poke still holds, and reports whether it did.
func pokeBusy(rt *Runtime) bool {
	if asleep, awake := rt.sleeping(); !policy.Poke(asleep > 0, awake > 0) {
		return false
	}
	for _, w := range rt.workers {
		if w.sleeper.Load() == nil {
			w.attn.Store(1)
		}
	}
	return true
}

// sleeping counts the workers that sleep and those that do not.
func (rt *Runtime) sleeping() (asleep, awake int) {
	for _, w := range rt.workers {
		if w.sleeper.Load() != nil {
			asleep++
		}
	}
	return asleep, len(rt.workers) - asleep
}

// fitPs asks adjust for the extra Ps that the goroutines competing for Ps
// need now (procs.go): those running or runnable beyond the ticker itself
// and one per worker, whether the worker sleeps or not (its P is the
// worker's, ready for when it wakes). Threads detached from their worker
// that compute count among them. awake is how many workers did not sleep
// at the tick (for the kicks).
func (tk *ticker) fitPs(rt *Runtime, long int, collecting bool, awake int) {
	if rt.reserved == 0 || goruntime.GOMAXPROCS(0) <= len(rt.workers) {
		return // KeepGOMAXPROCS, or the program has taken GOMAXPROCS over (procs.go)
	}
	// The ticker's timer often fires on a worker's P, as the worker's
	// goroutine hands its token on: the ticker then runs first and the
	// worker's goroutine waits, runnable, while an idle P, if there is one,
	// spins to take it; the worker counts twice. So a count above the
	// reservation is made again after a yield, which lets the worker's P
	// run the worker's goroutine and an idle P take the ticker from Go's
	// global run queue; if no P is idle, the ticker waits there for one,
	// which is the case it looks for. (Not at every tick: each yield with
	// a P idle wakes an OS thread for nothing.)
	others := tk.sched.demand() - 1 - len(rt.workers)
	if others > tk.fit.asked {
		goruntime.Gosched()
		others = tk.sched.demand() - 1 - len(rt.workers)
	}
	now := rt.now()
	// Threads detached from a worker that have computed for long hold
	// their P for a while too; reserving one for each at once, beside the
	// others' smoothed count, keeps a P free while library calls without
	// preemption points come and go faster than policy.OthersFor (P5).
	//
	// Short slices, and lowering off (O3), while threads of the normal
	// class compete for the cores: the program's own goroutines, seen
	// every tick for policy.OthersFor, or threads detached from their
	// worker while the collector runs (they are demoted only while it does
	// not); short slices also while the collector runs at all (procs.go).
	// Otherwise detached threads are demoted, and short slices beside
	// lowered workers only delay wake-ups.
	tk.own.see(others > int(rt.detBusy.Load()), now)
	if collecting && long > 0 {
		tk.own.hold(now)
	}
	// Kicks only while the goroutines that compute outnumber the
	// processors, seen every tick for policy.OthersFor (and a calm window
	// after): with a core to spare, a woken thread has no rival to lose a
	// pick to, and a kick costs every processor a wake-up.
	tk.crowd.see(others+awake > goruntime.NumCPU(), now)
	w := psWant{extra: tk.fit.asked, short: tk.own.on(now), gc: collecting}
	w.kick = w.short && tk.crowd.on(now)
	if n, ok := tk.fit.next(now, max(tk.fit.need(now, others, goruntime.NumCPU()), long)); ok {
		w.extra = n
		tk.ask(w)
	} else if w != tk.wish {
		tk.ask(w)
	}
}
