package engine

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// Lowered ranks: a worker's OS thread follows the rank it runs. A holder
// that runs thread code of a rank below one with a share runs it in Linux's
// idle class, so that the network poller, timers and the top priority's
// goroutines, woken, take its core at once instead of waiting for the next
// scheduler tick. The invariants O1-O5 and why they hold: PROTOCOLS.md,
// "Lowered ranks".

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
	// mu guards gors, the goroutines whose OS thread is lowered now (O3):
	// a goroutine adds itself as it lowers, whoever raises it removes it.
	mu   sync.Mutex
	gors map[*gor]struct{}
	// The ticker's: offUntil is when lowering may come back after a
	// lowered holder was seen starved (O5); seen holds, per worker, the
	// holder and its thread's processor time at the last tick.
	offUntil int64
	seen     []starveWatch
}

// starveWatch is what the ticker saw of a worker's lowered holder.
type starveWatch struct {
	g       *gor
	tid     int32
	cpu, at int64 // the holder's thread's processor time at the window's start, and when
}

// lowered reports whether rank r runs lowered now.
func (l *lowering) lowered(r int) bool { return r < 64 && l.mask.Load()>>uint(r)&1 != 0 }

// lower updates, at a tick at now, the lowered ranks for the criterion in
// force (belowMask); off says lowering must be off (the collector runs, or
// the program's own goroutines compete for Ps). It raises every lowered
// thread when lowering goes off (O3), and turns it off for
// policy.CalmWindow when a lowered holder starves (O5).
func (rt *Runtime) lower(off bool, now int64) {
	l := &rt.low
	if !l.enabled {
		return
	}
	if rt.starving(now) {
		l.offUntil = now + int64(policy.CalmWindow)
	}
	mask := rt.belowMask()
	if off || l.holds.Load() > 0 || now < l.offUntil {
		mask = 0
	}
	if l.mask.Swap(mask) != mask && mask == 0 {
		rt.raiseAll()
	}
}

// starving reports whether some worker's holder stayed lowered on one OS
// thread and runnable over the last policy.StarveWindow and got less than
// 1/policy.ComputingFraction of that time on a processor: threads of other
// processes (or of this one, outside the runtime) keep the cores, and a
// lowered holder would wait for them with everything queued at its worker
// (O5). A window starts again whenever the holder or its thread changes: a
// goroutine that parked may come back on another thread, whose processor
// time is not comparable. A single tick is too short to tell: the echo's
// and the poller's threads, woken, rightly take a lowered core for a
// millisecond.
func (rt *Runtime) starving(now int64) bool {
	l := &rt.low
	if l.seen == nil {
		l.seen = make([]starveWatch, len(rt.workers))
	}
	starved := false
	for i, w := range rt.workers {
		sw := &l.seen[i]
		h := w.holder.Load()
		tid := int32(0)
		if h != nil && w.sleeper.Load() == nil {
			tid = h.lowTid.Load()
		}
		if tid == 0 {
			sw.g = nil
			continue
		}
		if sw.g != h || sw.tid != tid || sw.cpu < 0 {
			sw.g, sw.tid, sw.cpu, sw.at = h, tid, threadCPU(tid), now
			continue
		}
		if now-sw.at < int64(policy.StarveWindow) {
			continue
		}
		cpu := threadCPU(tid)
		if cpu >= sw.cpu && policy.ComputingFraction*(cpu-sw.cpu) < now-sw.at && threadRunnable(tid) {
			starved = true
		}
		sw.cpu, sw.at = cpu, now
	}
	return starved
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

// raiseAll raises every lowered thread of the runtime (O3).
func (rt *Runtime) raiseAll() {
	l := &rt.low
	l.mu.Lock()
	gs := make([]*gor, 0, len(l.gors))
	for g := range l.gors {
		gs = append(gs, g)
	}
	l.mu.Unlock()
	for _, g := range gs {
		g.raise()
	}
}

// raiseStuck raises the thread of w's holder, if lowered (O4).
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
	l := &g.rt.low
	l.mu.Lock()
	l.gors[g] = struct{}{}
	l.mu.Unlock()
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
		l := &g.rt.low
		l.mu.Lock()
		delete(l.gors, g)
		l.mu.Unlock()
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
