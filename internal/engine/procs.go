package engine

import (
	goruntime "runtime"
	"runtime/metrics"
	"sync"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Go Ps for wake-ups.
//
// A goroutine that the network poller, a timer or a channel makes ready
// runs only once a Go P goes through Go's scheduler, and the network is
// polled only by a P that finds both run queues empty (findRunnable), by a
// thread blocked in the poller for an idle P, or by Go's system monitor,
// which looks every 10 ms at best. fairly's workers hold their Ps and enter
// Go's scheduler only when they hand their token on, so New raises
// GOMAXPROCS to policy.SpareProcs Ps more than the workers: the spare Ps,
// idle, watch the network and the timers, and the thread woken there (an
// Await-ed call, a request read by fairlyhttp) takes a worker at once
// (RunHere, takeOver).
//
// Whatever else computes takes those Ps: an ordinary goroutine of the
// program, a thread detached from its worker (revoke.go), a computing
// Await-ed call, a goroutine Go preempted. Once all are taken no P is
// idle, the reader waits up to 10 ms for the monitor to poll and up to
// 10 ms more in the global run queue for Go's preemption, and so does the
// ticker itself. So each tick the ticker
// counts the goroutines that run or wait for a P (runtime/metrics,
// /sched/goroutines/running and runnable: a scan of the Ps under the
// scheduler's lock, no stop of the world) and subtracts its own share,
// itself and one per worker (a sleeping worker's P is idle, but it is the
// worker's when it wakes). What is left, the others, is the number of Ps
// the runtime reserves beyond its workers and the spares, once every tick
// over policy.OthersFor saw at least that many, and at most one per processor of
// the machine: past that, the others' goroutines get no more processor
// time from more Ps, they only take more of it from the workers. Until the
// reservation is made (policy.OthersFor, and the ticker, a goroutine
// itself, must get a P to count), the spares take the newcomers; one was
// not enough (policy.SpareProcs).
//
// Invariant P1 (PROTOCOLS.md): a P stays free once the others' demand has
// been steady for policy.OthersFor and the change it asked for is made.
//
// A spare P is not a core. With more computing threads than cores, the
// OS thread that Go wakes in the poller waits for a core, and Linux lets a
// woken thread preempt a running one only once that one has used up its
// time slice (0.7 to 3 ms by default) or when the woken one's slice is
// shorter (see setSlices). fairly's workers offer their core every policy.OSYieldEvery
// (osYield), but the others' goroutines do not. So while Ps are reserved
// and threads of the normal class compete for the cores (the program's
// own goroutines, or detached threads during a collection, when they are
// not demoted), the runtime also takes a share of the short time slices
// (0.1 ms) for the process's threads, unless Config.ShortSlices holds one
// for good or Config.Demote is off (the program keeps the OS's defaults),
// and gives it back a calm window after (P4). It takes a share of them
// too while the collector runs (a cycle started within
// policy.CollectorQuiet), whatever the others do: in a mark phase Go runs
// a mark worker on every idle P, the spares with them, so threads
// outnumber the cores, and those idle workers are what polls the network
// then, each only while its thread has a core. Nothing runs lowered or
// demoted while the collector runs (lower.go, revoke.go), so the short
// slices then delay no wake-up. While the others compete, the runtime
// also takes a share of the kicks (kick_linux.go, P6): a woken thread
// that loses its core's pick to a thread that waited longer is picked at
// the next look Linux takes at that core, and a kicker on each core makes
// that look come within policy.KickEvery instead of at a scheduler tick.
// Short slices cost cooperative code (every wake-up preempts a worker),
// and beside lowered workers they delay wake-ups instead of hastening
// them, which is why they are not on all the time.
//
// Changing GOMAXPROCS stops the world, so changes are rare: a raise is made
// as soon as the need is seen (a spare P is taken now), a lowering only
// after the need stayed lower for a calm window (a second; doubled, up to
// policy.MaxCalm, whenever a raise followed the last lowering within the window),
// and only to the most that the window needed. A steady load therefore
// changes GOMAXPROCS once, and a load that comes and goes at most about
// once a window.
//
// GOMAXPROCS stays the program's: the value it sets, before New or at any
// time after, is the floor (base); the runtimes only add Ps above it, up to
// the sum of their workers and extra Ps plus the spares, and the last Close
// goes back to the base. A program that sets it, after New, below the
// workers and the spare (testing.AllocsPerRun sets 1 for its measurement)
// has taken it over: the runtimes leave it alone, and their tickers count
// nothing, until the program sets a value that holds them again, or the
// last of them closes.

// othersRing bounds the ticks the ticker keeps of others' goroutines:
// those of the last policy.OthersFor, one a tick.
const othersRing = 32

// maxprocs is the reservation of Ps shared by every live runtime of the
// process that reserves (Config.ReserveP).
var maxprocs struct {
	sync.Mutex
	users   int  // live runtimes that reserve
	workers int  // their workers
	extra   int  // the extra Ps they reserve beyond the workers and the spare
	base    int  // GOMAXPROCS as the program set it, as last seen
	set     int  // the value last set here or seen, 0 if none since the last user left
	held    bool // the program set a value below workers+1 after they reserved
}

// joinProcs starts a runtime's reservation of its workers' Ps (and the
// spares).
func joinProcs(workers int) { fitProcs(workers, 0, 1) }

// reserveP adds n extra Ps (n < 0: gives them back) to a live runtime's
// reservation and reports whether extra Ps are in force now (reserved, and
// the program has not taken GOMAXPROCS over).
func reserveP(n int) bool { return fitProcs(0, n, 0) }

// leaveProcs ends the reservation of a runtime of workers workers and
// extra extra Ps.
func leaveProcs(workers, extra int) { fitProcs(-workers, -extra, -1) }

// fitProcs changes the reservation and sets GOMAXPROCS to fit it. A value
// other than the one set or seen here last is the program's (or Go's own
// default, tracking the machine's limit): it becomes the base, and holds
// the runtimes off if it is below their workers and the spare while they
// live. With no user left, GOMAXPROCS goes back to the base. It reports
// whether extra Ps are in force.
func fitProcs(workers, extra, users int) bool {
	m := &maxprocs
	m.Lock()
	defer m.Unlock()
	cur := goruntime.GOMAXPROCS(0)
	if m.set == 0 || cur != m.set {
		m.base = cur
		m.held = m.users > 0 && cur < m.workers+1
	}
	m.users += users
	m.workers += workers
	m.extra += extra
	target := m.base
	if m.users > 0 && !m.held {
		target = max(target, m.workers+m.extra+policy.SpareProcs)
	}
	if target != cur {
		goruntime.GOMAXPROCS(target)
	}
	m.set = target
	if m.users == 0 {
		m.workers, m.extra, m.set, m.held = 0, 0, 0, false
	}
	return m.users > 0 && !m.held && m.extra > 0
}

// BaseProcs is GOMAXPROCS as the program set it, not as raised by runtimes.
func BaseProcs() int {
	maxprocs.Lock()
	defer maxprocs.Unlock()
	if cur := goruntime.GOMAXPROCS(0); maxprocs.users == 0 || cur != maxprocs.set {
		return cur
	}
	return maxprocs.base
}

// psFit is the ticker's account of the extra Ps to reserve; see above. The
// ticker's own: nobody else touches it.
type psFit struct {
	asked int // the extra Ps last asked for
	// others holds the others' goroutines seen at the last othersRing
	// ticks and at, when; a ring whose next slot is i.
	others [othersRing]int
	at     [othersRing]int64
	i      int
	// calmSince is when the need fell below asked (-1: it has not), and
	// calmMax the most it needed since.
	calmSince int64
	calmMax   int
	// window is the calm a lowering waits for now; lowered is when the last
	// lowering was asked and changed when the last change was (-1: never).
	window           int64
	lowered, changed int64
}

func newPsFit() psFit {
	f := psFit{calmSince: -1, window: int64(policy.CalmWindow), lowered: -1, changed: -1}
	for i := range f.at {
		f.at[i] = -1 << 62 // long ago, seeing nobody
	}
	return f
}

// need is the number of extra Ps wanted, given others, the goroutines seen
// running or runnable at now beyond the ticker and the workers: the lowest
// count seen over the last policy.OthersFor (the ticks since then and the one
// before, or the whole ring), at most limit. A goroutine that competes for
// a P only briefly, such as a thread detached by a seizure (it runs
// cooperative code and is back at its next point, microseconds later),
// must not cost two stops of the world, up and down a calm window later.
func (f *psFit) need(now int64, others, limit int) int {
	f.others[f.i], f.at[f.i] = max(others, 0), now
	low := others
	for k := range othersRing {
		j := (f.i - k + othersRing) % othersRing
		low = min(low, f.others[j])
		if f.at[j] <= now-int64(policy.OthersFor) {
			break // the window is covered (or, with very short ticks, the ring)
		}
	}
	f.i = (f.i + 1) % othersRing
	return min(max(low, 0), limit)
}

// next decides, at now, on need extra Ps: it returns the number to ask for
// and true when GOMAXPROCS should change. It raises at once, and lowers to
// the most the calm window needed once the need stayed below asked for the
// whole window. A raise within the window after a lowering doubles the
// window (up to policy.MaxCalm); policy.MaxCalm without a change resets it.
func (f *psFit) next(now int64, need int) (int, bool) {
	if f.changed >= 0 && now-f.changed >= int64(policy.MaxCalm) {
		f.window = int64(policy.CalmWindow)
	}
	switch {
	case need > f.asked:
		if f.lowered >= 0 && now-f.lowered < f.window {
			f.window = min(2*f.window, int64(policy.MaxCalm))
		}
		f.calmSince = -1
		return f.change(now, need), true
	case need == f.asked:
		f.calmSince = -1
		return f.asked, false
	case f.calmSince < 0:
		f.calmSince, f.calmMax = now, need
		return f.asked, false
	}
	f.calmMax = max(f.calmMax, need)
	if now-f.calmSince < f.window {
		return f.asked, false
	}
	f.calmSince = -1
	f.lowered = now
	return f.change(now, f.calmMax), true
}

func (f *psFit) change(now int64, n int) int {
	f.asked, f.changed = n, now
	return n
}

// schedSample reads how many goroutines of the process run on a P or wait
// for one.
type schedSample [2]metrics.Sample

// newSchedSample prepares the sample and reads it once, so that Go's
// one-time set-up of runtime/metrics (a map of every metric, some fifty
// allocations) happens in New rather than at a tick while the program runs.
func newSchedSample() *schedSample {
	s := &schedSample{{Name: "/sched/goroutines/running:goroutines"}, {Name: "/sched/goroutines/runnable:goroutines"}}
	s.demand()
	return s
}

// demand is the number of goroutines running or runnable now; 0 where Go
// does not tell.
func (s *schedSample) demand() int {
	metrics.Read(s[:])
	n := 0
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += int(v.Value.Uint64())
		}
	}
	return n
}
