package engine

import (
	goruntime "runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// Revocation: taking a token from a goroutine stuck in a thread's code.
//
// A thread may run for a long time without reaching a preemption point (a
// library call such as slices.Sort of a million keys), or block outside
// Await (a channel receive, a sync.WaitGroup, a mutex held by a preempted
// thread). Its worker would then serve nothing else: threads queued in its
// banks, inbox and mailboxes would wait, and a thread that blocks on
// another thread queued there would wait for ever. So the token is taken away
// from such a goroutine and given to another, which carries on the worker's
// loop with everything the worker held; the stuck goroutine goes on running
// its thread's code without a token ("detached") and, at its next preemption
// point or when the thread ends, queues its thread again as an ordinary
// continuation.
//
// The protocol. Each goroutine has a mode word:
//
//	modeSched   holds a token, runs scheduler code: may touch the worker's owner state
//	modeUser    holds a token, runs a thread's code: must not touch owner state
//	modeRevoked its token was taken while in modeUser
//
// Transitions: the holder stores modeUser when it leaves the runtime for
// thread code (leave) and swaps modeUser → modeSched by compare-and-swap
// when it comes back (enter); a revoker swaps modeUser → modeRevoked by
// compare-and-swap (revoke); a goroutine that finds itself revoked stores
// modeSched once it gave up the worker (reattach).
//
// Invariants M1-M4 (PROTOCOLS.md): one owner of the owner state at a time,
// the new holder sees it complete, no thread lost or run twice, and Close
// waits for detached threads.
//
// When tokens are revoked:
//   - by a thread that arrives from outside a worker (resumed after Await
//     or Sleep, or submitted) when every worker that could run it soonest
//     runs a lower priority and has not passed a preemption point for
//     policy.StaleAfter: the arriving goroutine takes the token at once;
//   - by a thread resumed after Await or Sleep whose goroutine finds a
//     worker that runs a lower priority's code and would switch to the
//     resumed thread's priority at its next point (policy.Seizes): the
//     goroutine, running already, takes the token and carries on as the
//     worker's holder (takeOver), preferring a worker that runs on its own
//     processor (seize). The holder, cooperative as a rule, comes
//     back at its next point and queues its thread again, as after any
//     revocation; the resumed thread skips a goroutine switch and Go's
//     wake-up of an OS thread for it. A thread of a rank that no rank with
//     a share is above first takes a sleeping worker or runs loose (R4),
//     and seizes only once Procs threads run loose;
//   - by the watchdog (ticker.go) when a worker has not passed a preemption
//     point for policy.StallTicks ticks and someone waits for it (threads
//     queued in its banks, inbox or mailboxes, a request, an idle worker that
//     may want its spare threads, the end of its round), or for a whole round
//     whether anyone waits or not (it may be blocked). When a thread above
//     the stuck one waits in the worker's banks, inbox or mailboxes, the
//     watchdog revokes for that thread's rank, as its arrival would have:
//     a queued thread never arrives again, so the limit below would
//     otherwise keep it waiting for the library call to end.
//
// A detached goroutine that computes takes processor time beside the
// worker's new holder. To keep that bounded (invariant M6, PROTOCOLS.md),
// a worker with a computing detached goroutine is revoked again only for an arriving thread of higher
// priority than every detached one (the watchdog adds at most one per
// priority level; an arrival may add one each time it finds the worker stuck
// again below it, so that a top-priority thread never waits for a library
// call that may never end); detached goroutines that block cost nothing and
// are not limited. On Linux its OS thread is demoted, so that it takes
// only processor time nobody else wants (Demotion, below).

// The modes of a goroutine; see above. modeQueued goes with modeUser: the
// worker's banks (or the holder's lazy forks) held threads when its holder
// left the scheduler, so the watchdog knows, without touching owner state,
// that a stall holds them up. modeBusy goes with modeRevoked: the
// revocation counted the goroutine as computing (M6), which the goroutine
// learns from the very word that told it of the revocation.
const (
	modeSched   mode = 0
	modeUser    mode = 1
	modeRevoked mode = 2
	modeQueued  mode = 4
	modeBusy    mode = 8
	// modeLoose goes with modeRevoked: the goroutine runs a thread resumed
	// after an Await-ed call without a token (loosen, R4), and no worker
	// was taken from it.
	modeLoose mode = 16
	// The bits from modeWorkerShift up to modeTopShift hold, with
	// modeUser, the index of the worker whose token the goroutine holds
	// (T3): a revoker's won compare-and-swap then names the worker it took
	// (M5), whatever the goroutine did since. (24 bits: package runtime
	// makes at most MaxProcs workers.)
	modeWorkerShift = 8
	modeWorkerMask  = 1<<24 - 1
	// The bits from modeTopShift up hold 1 + the highest rank queued in the
	// worker's banks when the holder left the scheduler (0: none), so that
	// the watchdog can tell a stall that holds up a higher priority.
	modeTopShift = 32
)

// mode is the value of a goroutine's mode word: one of the modes above,
// with modeQueued, the worker held and the queued rank beside modeUser,
// and modeBusy beside modeRevoked.
type mode uint64

// worker is the index of the worker named by a mode with modeUser (T3).
func (m mode) worker() int { return int(m>>modeWorkerShift) & modeWorkerMask }

// modeWord is a goroutine's mode word, an atomic mode.
type modeWord struct{ v atomic.Uint64 }

// Load reads the mode atomically.
func (x *modeWord) Load() mode { return mode(x.v.Load()) }

// Store writes m atomically.
func (x *modeWord) Store(m mode) { x.v.Store(uint64(m)) }

// CompareAndSwap swaps the mode from old to m if it is old.
func (x *modeWord) CompareAndSwap(old, m mode) bool {
	return x.v.CompareAndSwap(uint64(old), uint64(m))
}

// Thread code keeps its OS thread. From its first passage into a thread's
// code until it parks, a goroutine is locked to its OS thread (lock,
// unlock). Code that runs long without a preemption point, detached or not,
// then stays on one OS thread when Go preempts it every 10 ms, instead of
// hopping to whichever thread of Go's steals it from the global run queue.
// That matters to the OS scheduler: Linux's EEVDF remembers how far each
// thread ran ahead of its share (lag, up to a few ms) and lets a woken
// thread run only once that debt is paid. Hopping spread the library call's
// processor time over every thread of the process, so the thread that woke
// for the network poller owed a few ms as often as not, and the top
// priority's reply waited for it (measured in docs/design.md at a27d125,
// "What the OS scheduler does with a wake-up"). A lock costs two field writes and, for demotion below, a
// system call for the thread's id; the goroutine lets go of its thread
// before it parks, so that hand-offs between goroutines stay the cheap ones
// Go makes on one OS thread, and before it runs an Await-ed call (Suspend),
// which may block. Thread code that blocks outside Await (a
// channel, a mutex) parks its OS thread with it; Go runs the P on another.
//
// Demotion. A detached goroutine that computes competes with the workers
// for the machine's cores, and Go's own threads (the network poller's,
// timers') wait behind it for a core: the top priority's request then
// arrives late. So the ticker demotes the OS thread of a goroutine that has
// computed detached for policy.StaleAfter of processor time to Linux's idle class
// (SCHED_IDLE), which gets a core only when no other thread wants it and
// gives it up at once to any that wakes. Cooperative code revoked for an
// urgent thread comes back at its next preemption point, within
// microseconds of running, and is never demoted. The thread is the right
// one because the goroutine is locked to it (tid, learned once per lock: a
// system call per park). Invariants M7 and M8 (PROTOCOLS.md): a demoted
// thread is still locked to its detached goroutine, and one that cannot be
// promoted again runs only its own thread.
//
// Only while the collector is quiet. Go's stop of the world, which every
// collection makes twice, waits for each running goroutine to reach a safe
// point, and a library call with no preemption point reaches one only when
// it returns: demoted, it returns only when the cores have nothing else to
// do, and the whole program, the top priority with it, stops meanwhile.
// Beside a load that allocates (a library call cloning megabytes each
// time) the collector's pauses were then many times longer, and
// the echo's p99 with it (docs/results.md, "The prompt experiment"). So
// the ticker demotes only while no collection started within
// policy.CollectorQuiet, and promotes the demoted threads back as soon as
// one did; the short time slices, in force while the collector runs
// (procs.go), then keep the network poller's wait for a core short.

// detachedList holds the goroutines that compute detached, for demotion.
type detachedList struct {
	mu   sync.Mutex
	gors []*gor
	// The ticker's, for demote: the list as it was read, and the
	// processor time of each one's thread.
	seen []*gor
	cpus []int64
}

// swap is the revoker's compare-and-swap of h's mode from m to revoked
// (modeRevoked, with modeBusy if it counts h as computing). If it wins and
// listed says so, h goes into the list, with
// the processor time its OS thread has used so far, in the same critical
// section: h takes the lock in settle, so it cannot come back and settle
// before it is listed (a stale entry would later demote whatever thread h
// is locked to then, and h would hand that thread back to Go's pool).
func (l *detachedList) swap(h *gor, m, revoked mode, listed bool) bool {
	if !listed {
		return h.mode.CompareAndSwap(m, revoked)
	}
	cpu := threadCPU(h.tid.Load())
	l.mu.Lock()
	defer l.mu.Unlock()
	if !h.mode.CompareAndSwap(m, revoked) {
		return false
	}
	h.detCPU = cpu
	l.gors = append(l.gors, h)
	return true
}

// demote demotes the OS threads of the goroutines that have computed for
// policy.StaleAfter since they were detached, at now; the ticker calls it. It
// counts processor time, not time: a goroutine of cooperative code that
// the OS has not run since (its core was taken by the very thread that
// revoked it) is not stuck, and comes back at its next point. Where the
// processor time is not known, time since the revocation counts. While the
// collector works (collecting) it promotes the demoted threads back
// instead; one that Linux does not let it promote stays demoted, for
// settle to pin (M8). It returns how many have computed that long: they
// hold a P each for a while, and the ticker reserves one for each (P5).
func (l *detachedList) demote(now int64, collecting bool) (long int) {
	// The threads' processor times are read outside the lock, a system
	// call each: seizers wait for the lock in swap, and the ticker, one
	// thread among more than there are cores, may lose its core in the
	// middle of the loop (an execution trace showed an echo's seizure
	// waiting 46 ms for it). Only the class changes need the lock (M7).
	// The list keeps its order (swap appends, settle deletes), so one walk
	// pairs each goroutine still listed with its reading; one settled
	// meanwhile is gone, and one listed since waits for the next tick.
	l.mu.Lock()
	l.seen = append(l.seen[:0], l.gors...)
	l.mu.Unlock()
	l.cpus = l.cpus[:0]
	for _, g := range l.seen {
		l.cpus = append(l.cpus, threadCPU(g.tid.Load()))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for _, g := range l.gors {
		for i < len(l.seen) && l.seen[i] != g {
			i++
		}
		if i == len(l.seen) {
			break // g and those after it were listed after the readings
		}
		cpu := l.cpus[i]
		i++
		tid := g.tid.Load()
		stale := g.demoted // demoted once it had computed long
		if !stale {
			ran := now - g.detSince.Load()
			if cpu >= 0 && g.detCPU >= 0 {
				ran = cpu - g.detCPU
			}
			stale = ran >= int64(policy.StaleAfter)
		}
		if stale {
			long++
		}
		if collecting {
			if g.demoted && promote(tid) {
				g.demoted = false
			}
			continue
		}
		if !g.demoted && tid != 0 && stale {
			g.demoted = demote(tid)
		}
	}
	return long
}

// collector tells whether Go's collector has started a cycle lately: the
// ticker reads, each tick, the count of the collector's stops of the world.
// A cycle stops the world as it starts (sweep termination) and as its mark
// phase ends, so the count changes within a tick of a cycle's start; the
// count of cycles (runtime/metrics' /gc/cycles/total) changes only as a
// cycle ends, which is too late: during the mark phase every goroutine's
// stack is scanned and every P must pass a safe point, and a lowered or
// demoted thread that waits for a core holds the whole phase up, and with
// it every goroutine that allocates and must assist the collector (O3,
// M8).
type collector struct {
	pauses [1]metrics.Sample
	seen   uint64
	last   int64 // when the count was last seen to change (-1: never)
}

func newCollector() collector {
	c := collector{last: -1}
	c.pauses[0].Name = "/sched/pauses/total/gc:seconds"
	c.seen = c.read()
	return c
}

// read is the number of the collector's stops of the world so far. The
// histogram is read into the same buckets each time: no allocation after
// the first.
func (c *collector) read() uint64 {
	metrics.Read(c.pauses[:])
	if c.pauses[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	var n uint64
	for _, b := range c.pauses[0].Value.Float64Histogram().Counts {
		n += b
	}
	return n
}

// active reports, at now, whether a cycle started within
// policy.CollectorQuiet (seen at this tick or an earlier one).
func (c *collector) active(now int64) bool {
	if n := c.read(); n != c.seen {
		c.seen, c.last = n, now
	}
	return c.last >= 0 && now-c.last < int64(policy.CollectorQuiet)
}

// settle takes g, revoked and back in the runtime, out of the list, and
// promotes its OS thread back if it was demoted, or pins g to it if Linux
// refuses.
func (l *detachedList) settle(g *gor) {
	l.mu.Lock()
	if i := slices.Index(l.gors, g); i >= 0 {
		l.gors = slices.Delete(l.gors, i, i+1)
	}
	demoted := g.demoted
	g.demoted = false
	l.mu.Unlock()
	if demoted && !promote(g.tid.Load()) {
		g.pinned = true
	}
}

// lock locks g to its OS thread, if it is not locked already, registers
// it as the thread's goroutine (self.go) and learns the thread's id, for the
// watchdog to read its processor time and to demote it.
func (g *gor) lock() {
	if g.locked {
		return
	}
	goruntime.LockOSThread()
	g.locked = true
	k, tid := threadKey()
	g.register(k)
	if !g.caller {
		g.tid.Store(tid)
	}
}

// unlock lets go of g's OS thread, unless g is pinned to it.
func (g *gor) unlock() {
	if !g.locked || g.pinned {
		return
	}
	g.raise() // O2
	g.tid.Store(0)
	g.forget()
	g.locked = false
	goruntime.UnlockOSThread()
}

// exit is unlock for a goroutine that ends: a pinned one keeps its OS
// thread, which Go then ends with it, but leaves no entry in locks.
func (g *gor) exit() {
	g.unlock()
	if g.locked {
		g.forget()
	}
}

// leave marks the passage from scheduler code to the running thread's code.
func (g *gor) leave() {
	r := g.w.cur
	if r != g.label && r >= 0 {
		g.label = r
		pprof.SetGoroutineLabels(g.rt.labels[r])
	}
	if r >= 0 && trace.IsEnabled() {
		g.region = trace.StartRegion(g.rt.labels[r], g.rt.regions[r])
	}
	m := g.userMode()
	g.lock() // before the store of the mode, for the revoker: see above
	if r >= 0 {
		g.follow(int(r))
	}
	g.mode.Store(m)
}

// userMode is the mode word g stores as it leaves for thread code: modeUser
// with the index of the worker it holds (T3), and modeQueued and the
// highest rank queued if threads wait in its worker's banks or its shared
// lazy stack.
func (g *gor) userMode() mode {
	m := modeUser | mode(g.w.id)<<modeWorkerShift
	top := g.w.highest()
	if top >= 0 || g.lazy.bot < g.lazy.top {
		m |= modeQueued | mode(top+1)<<modeTopShift
	}
	return m
}

// enter marks the passage from thread t's code back into the scheduler. If
// g's token was revoked meanwhile, it first queues t and waits until t holds
// a token again. Either way it returns holding a token, in modeSched.
func (g *gor) enter(t *Task) {
	if g.region != nil {
		g.region.End()
		g.region = nil
	}
	if m := g.mode.Load(); m&modeUser != 0 && g.mode.CompareAndSwap(m, modeSched) {
		return
	}
	g.reattach(t)
}

// reattach is enter for a revoked goroutine: it gives up the worker it
// lost and comes back as a continuation of t, like a thread after Await.
func (g *gor) reattach(t *Task) {
	if g.mode.Load()&modeLoose != 0 {
		g.unloose(t)
		g.rejoin(t, false)
		return
	}
	w := g.w // the worker its revoker took: the one its mode word named (M5)
	g.w = nil
	busy := g.mode.Load()&modeBusy != 0
	g.mode.Store(modeSched)
	if busy {
		g.rt.detached.settle(g)
		// Its thread computed detached: charge that time to its priority,
		// so that Stats counts every goroutine's work.
		w.stats.cpu[t.rank].Add(g.rt.now() - g.detSince.Load())
	}
	w.detachEnded(busy)
	g.rejoin(t, false)
}

// revoke takes the token of w from h, its holder, if h runs a thread's code
// of a rank below below and w's detached goroutines allow it; busy says h
// may be computing rather than blocked.
// On success it returns w, whose owner state the caller now owns and must
// give to a new holder; the caller counts the revocation in its statistics
// (a rescue or a seizure).
func (rt *Runtime) revoke(w *worker, h *gor, below int32, busy bool) *worker {
	if h == nil {
		return nil
	}
	m := h.mode.Load()
	// Invariant M5 (PROTOCOLS.md): only a mode word that names w can give
	// w's token. w's holder word may name a goroutine that holds another
	// worker by now, or none.
	if m&modeUser == 0 || m.worker() != w.id || w.running.Load() >= below {
		return nil
	}
	revoked := modeRevoked
	if busy {
		revoked |= modeBusy
	}
	w.detMu.Lock()
	won := false
	if !policy.RefuseRevoke(busy, int(w.detBusy), int(w.running.Load()), int(w.detTop), int(below)) {
		// A hint for demotion and for the charge of h's time: a revoker
		// that loses the swap below may still move it a little later.
		h.detSince.Store(rt.now())
		won = rt.detached.swap(h, m, revoked, busy && rt.demote)
	}
	if won {
		// Counted before h, back, can take itself away (detachEnded takes
		// detMu, and rejoin follows it): Q2, M6.
		rt.suspended.Add(1)
		if busy {
			w.detBusy++
			w.detTop = max(w.detTop, w.running.Load())
			rt.detBusy.Add(1)
		}
	}
	w.detMu.Unlock()
	if !won {
		return nil // a second computing goroutine at that level would not help, or h came back
	}
	if revokeWon != nil {
		revokeWon(h)
	}
	// From here on h may be back in the runtime, even holding another
	// worker: nothing below asks h which worker it held.
	h.raise() // O2
	w.takeLazy(h)
	w.attn.Store(1)
	return w
}

// revokeWon, set only by tests, runs right after a revocation's swap won:
// the detached goroutine may come back and take another worker's token
// meanwhile, and the revocation must still hand on the worker it took (M5).
var revokeWon func(h *gor)

// waitingTop is the highest rank of the threads that wait for w while its
// holder, whose mode word is m, runs a thread's code: in its banks (as of
// the holder's leave), inbox or mailboxes; policy.NoRank if none.
func (w *worker) waitingTop(m mode) int32 {
	top := int32(m>>modeTopShift) - 1
	top = max(top, w.inbox.top.Load()-1)
	for r := len(w.mail) - 1; r > int(top); r-- {
		if w.mail[r].State() == mailbox.Full {
			return int32(r)
		}
	}
	return top
}

// detachEnded drops the bookkeeping of a detached goroutine of w whose
// thread comes back; busy says it was counted as computing.
func (w *worker) detachEnded(busy bool) {
	w.detMu.Lock()
	defer w.detMu.Unlock()
	if busy {
		w.detBusy--
		w.rt.detBusy.Add(-1)
	}
	if w.detBusy == 0 {
		w.detTop = policy.NoRank
	}
}

// takeOver gives g, whose thread of rank r is ready, a token at once if
// that costs nobody a wait (takeFor; a seizure only if seize allows).
func (rt *Runtime) takeOver(g *gor, r int32, seize bool) bool {
	w := rt.takeFor(r, seize)
	if w == nil {
		return false
	}
	rt.adopt(g, w)
	return true
}

// takeFor takes, for a goroutine that is running already and whose thread
// of rank r is ready, the token of a sleeping worker, or, if seize allows,
// one that seize takes, and returns that worker for the caller to adopt;
// nil if neither. The sleeping goroutine stays with the worker as a spare;
// the revoked one goes on detached until its next point.
func (rt *Runtime) takeFor(r int32, seize bool) *worker {
	w := rt.takeSleeper()
	if w == nil && !seize {
		return nil // no processor to read: a loose resumption tries this first
	}
	here := currentCPU()
	if w == nil {
		if w = rt.seize(r, here); w == nil {
			return nil
		}
	}
	w.cpu.Store(here) // the worker runs on the caller's OS thread from now on
	return w
}

// seize takes, by revocation, the token of a worker that runs a lower
// priority's code and either would switch to rank r at its next point
// (policy.Seizes) or has not passed a point for policy.StaleAfter, and returns
// that worker, for the caller to give to a goroutine with adopt; nil if no
// worker qualifies. Workers are tried from a rotating start, as in steer,
// so that seizures spread.
//
// A worker whose holder runs on the caller's processor (here) comes first.
// A seizure moves the worker onto the caller's OS thread, and the old
// holder's thread soon parks: a worker taken from another processor leaves
// that one idle and doubles up with whatever worker runs here. Linux is
// slow to pull one of two such threads to the idle processor (a thread that
// ran within half a millisecond counts as cache-hot and stays put), so the
// two shared one core for milliseconds, and the process got less of the
// cores than with workers here first or no seizures (docs/results.md at
// 04ac75d, "Seizures that stack workers on one core"). A worker
// elsewhere is still taken when none here qualifies: the top priority must
// not wait for placement (declining those seizures left the echo beside the
// sort kernel waiting for the sort's next point). Where the
// processor is not known (-1 everywhere), every worker counts as here.
func (rt *Runtime) seize(r, here int32) *worker {
	now := rt.now()
	lends := rt.borrow && rt.crit.Load().ShareByRank(int(r)) > 0
	ws := rt.workers
	start := int(rt.steerSeq.Add(1))
	for _, near := range [2]bool{true, false} { // workers here first
		for i := range ws {
			w := ws[(start+i)%len(ws)]
			if (w.cpu.Load() == here) != near {
				continue
			}
			stale := now-w.lastService.Load() >= int64(policy.StaleAfter)
			if !stale && !policy.Seizes(int(r), int(w.running.Load()), int(w.primPub.Load()), lends) {
				continue
			}
			v := rt.revoke(w, w.holder.Load(), r, true)
			if v == nil {
				if stale {
					w.raiseStuck() // O4: it may be starved in the scheduler, where no revocation reaches it
				}
				continue
			}
			if stale {
				v.stats.rescues.Add(1)
			} else {
				v.stats.seizures.Add(1)
			}
			return v
		}
	}
	return nil
}

// adopt makes g the holder of w, whose token was free for the taking
// (invariant R1, PROTOCOLS.md).
func (rt *Runtime) adopt(g *gor, w *worker) {
	g.w = w
	w.holder.Store(g)
	w.attn.Store(1) // look at the inbox and mailboxes soon
	rt.moves.Add(1)
}
