package engine

import (
	goruntime "runtime"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/fairness"
)

// Lowered ranks: a worker's OS thread follows the rank it runs.
//
// A goroutine that the network poller, a timer or a channel wakes needs an
// OS thread with a core. With every core busy, Linux's EEVDF lets the woken
// thread run at once only if it is eligible (it did not run ahead of its
// share lately) and otherwise waits for the next scheduler tick, up to 4 ms
// at 250 Hz, and Go's threads that spin for work or poll the network run
// ahead as often as not. Go's scheduler makes it worse: a P whose thread
// waits for a core holds its run queue and its turn at polling the network.
// Threads of the idle class (SCHED_IDLE) are preempted by any woken thread
// of the normal class at once, whatever its lag, and Linux places a woken
// thread on a core that runs only idle-class threads as if it were idle.
//
// So a holder that runs thread code of a lowered rank, one below a rank
// with a share in the criterion (lowMask), runs it in the idle class: the
// process's other threads (the poller, timers, the top priority's readers,
// ordinary goroutines) take a core from it at once, and it computes on
// whatever the rest of the machine leaves. Among fairly's own threads
// nothing changes: the scheduler, not the OS, divides the workers between
// ranks. The top priority's code and the scheduler's own run in the normal
// class.
//
// Invariants (the code cites them):
//
//   - O1: only the holder lowers its own OS thread, in leave, just before
//     the mode store that opens it to revokers, and records it in its
//     lowTid right after.
//   - O2: a lowered thread runs nothing but its holder's thread code. Its
//     goroutine raises it (back to the normal class) in leave when the
//     next rank is not lowered and in unlock before it lets the thread go
//     (parking, an Await-ed call, exit); a revoker raises it right after
//     the revocation won (revoke), since a revoked goroutine must reach its
//     next point promptly, and its thread may be starved where it stands.
//     Whoever raises takes the thread's id from lowTid by a swap, so one
//     caller raises it. Go never gets an idle-class thread back into its
//     pool, but for the moment between another caller's swap and its
//     promote, when the goroutine found lowTid empty and let go.
//   - O3: while lowering is off (the collector runs, GOMAXPROCS changes,
//     Close), no holder's thread stays lowered. Whoever turns it off stores
//     the mask first and then raises every worker's holder; the holder
//     stores lowTid and then reads the mask again, and raises itself if it
//     went off. Of two sequentially consistent store-then-load pairs at
//     least one sees the other's store, so a thread lowered concurrently
//     is raised by one of them (the swap makes both harmless). A goroutine
//     that has just handed its token on is no holder, but it raises its
//     thread itself as it unlocks it before parking (O2).
//
//   - O4: a lowered holder that passes no preemption point may be starved
//     where no revocation reaches it, in the scheduler's code between two
//     passages into thread code. So the watchdog raises a worker's lowered
//     thread after a tick without a pass through the scheduler, and a
//     seizer raises the lowered thread of a worker that is stale; the
//     holder lowers it again at its next passage into thread code.
//
// Lowering is off while the ticker reserves Ps for goroutines outside the
// runtime (procs.go): where ordinary goroutines keep every core busy, a
// lowered holder would get no processor at all, and every thread queued at
// its worker would wait for the watchdog.
//
// A raise that Linux refuses (no CAP_SYS_NICE and an RLIMIT_NICE below 20)
// would leave the thread lowered, so New enables lowering only where a
// probe thread could both lower and raise itself (canRaise).

// lowMaskOf is the mask of lowered ranks under criterion c over the frozen
// order ranks: bit r is set when some rank above r in the partial order
// has a share. Ranks from 64 up are never lowered.
func lowMaskOf(c *fairness.Criterion, order *fairness.Order, ranks []fairness.Priority) uint64 {
	var mask uint64
	for r := 0; r < len(ranks) && r < 64; r++ {
		for above := r + 1; above < len(ranks); above++ {
			if c.ShareByRank(above) > 0 && order.LessEq(ranks[r], ranks[above]) {
				mask |= 1 << r
				break
			}
		}
	}
	return mask
}

// lowering is a runtime's state of lowered ranks.
type lowering struct {
	// enabled: Config.Demote and canRaise; fixed by New.
	enabled bool
	// mask is the set of lowered ranks now, 0 while lowering is off (O3).
	// Stored by the ticker (and by adjust and Close through hold), read in
	// leave.
	mask atomic.Uint64
	// holds counts reasons to keep lowering off (a GOMAXPROCS change in
	// progress, Close): while it is above zero, mask stays 0.
	holds atomic.Int32
	// want is the mask the criterion asks for, kept by the ticker, and
	// crit the criterion it was computed for; the ticker's.
	want uint64
	crit *fairness.Criterion
}

// lowered reports whether rank r runs lowered now.
func (l *lowering) lowered(r int) bool { return r < 64 && l.mask.Load()>>uint(r)&1 != 0 }

// lowerFor updates, at a tick, the lowered ranks for the criterion c; off
// says lowering must be off (the collector runs, or Ps are reserved for
// others). It raises every lowered thread when lowering goes off (O3).
func (rt *Runtime) lowerFor(c *fairness.Criterion, off bool) {
	l := &rt.low
	if !l.enabled {
		return
	}
	if c != l.crit {
		l.crit, l.want = c, lowMaskOf(c, rt.order, rt.ranks)
	}
	mask := l.want
	if off || l.holds.Load() > 0 {
		mask = 0
	}
	if l.mask.Swap(mask) != mask && mask == 0 {
		rt.raiseAll()
	}
}

// hold turns lowering off until release, raising every lowered thread
// first (O3): around a stop of the world, and for good at Close. The ticker
// turns it back on at its next tick after the release.
func (rt *Runtime) hold() {
	if !rt.low.enabled {
		return
	}
	rt.low.holds.Add(1)
	rt.low.mask.Store(0)
	rt.raiseAll()
}

// release ends a hold.
func (rt *Runtime) release() {
	if rt.low.enabled {
		rt.low.holds.Add(-1)
	}
}

// raiseAll raises the threads of every worker's holder (O3).
func (rt *Runtime) raiseAll() {
	for _, w := range rt.workers {
		w.raiseStuck()
	}
}

// raiseStuck raises the thread of w's holder, if lowered (O3, O4).
func (w *worker) raiseStuck() {
	if h := w.holder.Load(); h != nil {
		h.raise()
	}
}

// follow puts g's OS thread, locked, into the class of rank r, which g's
// worker is about to run (O1): lowered if r is, else normal.
func (g *gor) follow(r int) {
	if g.caller {
		return // an ordinary goroutine's thread in RunHere is the program's
	}
	low := g.rt.low.lowered(r)
	if low == (g.lowTid.Load() != 0) {
		return
	}
	if !low {
		g.raise()
		return
	}
	tid := g.tid.Load()
	if tid == 0 || !demote(tid) {
		return
	}
	g.lowTid.Store(tid)
	if !g.rt.low.lowered(r) { // lowering went off meanwhile (O3)
		g.raise()
	}
}

// raise gives g's thread the normal class back if g lowered it and nobody
// raised it since. Anyone may call it (O2-O4): the swap hands the thread's
// id to one caller only.
func (g *gor) raise() {
	if tid := g.lowTid.Swap(0); tid != 0 {
		promote(tid)
	}
}

// canRaise reports whether this process may raise a thread it lowered:
// a probe goroutine lowers and raises its own thread, which ends with it.
// Each New asks anew (a thread started and ended): the answer may change
// with the process's capabilities.
func canRaise() bool {
	ok := make(chan bool)
	go func() {
		goruntime.LockOSThread()
		_, tid := threadKey()
		ok <- tid != 0 && demote(tid) && promote(tid)
		// The goroutine ends locked: Go ends its thread, whatever its class.
	}()
	return <-ok
}
