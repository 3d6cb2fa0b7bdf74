// Package engine is fairly's scheduler: the workers, their scheduling loop,
// the goroutine hand-off that lets threads block, preemption points,
// revocation of stuck workers and the ticker. Its public faces are package
// runtime (New, Close, Stats) and package thread (the thread API); nothing
// outside fairly's own packages may import it, so it can change freely.
//
// The scheduling loop is in sched.go, the goroutine hand-off in
// goroutines.go, preemption points in preempt.go, lazy forks in lazy.go,
// revocation in revoke.go, and the ticker and watchdog in ticker.go.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// Errors returned by the runtime. Use errors.Is to test for them.
var (
	// ErrClosed is returned for work given to a runtime that is closing or closed.
	ErrClosed = errors.New("fairly: runtime closed")
	// ErrInvalidConfig is returned by New for a configuration it cannot use.
	ErrInvalidConfig = errors.New("fairly: invalid runtime configuration")
	// ErrInThread is returned by Close called from a thread of the runtime,
	// or from a function that Await or AwaitContext runs for a thread (of
	// any runtime: the call does not tell which thread it serves): Close
	// waits for every thread, that one included, so it could never return.
	// Close the runtime from the goroutine that made it.
	ErrInThread = errors.New("fairly: Close called from inside a thread of the runtime or a call it awaits")
	// ErrWaitInThread is returned by Run and RunHere called from a thread's
	// code, before anything runs: waiting there for another thread would
	// hold the caller's worker. Package thread returns it from Handle.Wait
	// and thread.Run too.
	ErrWaitInThread = errors.New("fairly: Handle.Wait inside a thread; use thread.Join")
)

// Config is a runtime's configuration, validated and with every default
// filled in by package runtime (whose Config documents each field).
type Config struct {
	Procs                                 int
	Order                                 *fairness.Order
	Criterion                             *fairness.Criterion
	Quantum, DealEvery, Interrupt, Budget time.Duration
	Borrow, Independent, ReserveP         bool
	ShortSlices, Demote                   bool
	Seed                                  uint64
	OnPanic                               func(p fairness.Priority, value any, stack []byte)
}

// Runtime is a set of workers running fairly prompt scheduling. Create it
// with New and release it with Close.
//
// Its type says who touches what: settings are fixed by New and read by
// everyone without synchronisation; shared is the state that the workers,
// the ticker and the callers of Submit, SetCriterion and Close touch at any
// time; osTuning is what the runtime changes in the process and the OS.
// The groups are embedded, so that code names the fields alike
// (rt.quantum, rt.roots).
type Runtime struct {
	settings
	shared
	osTuning
	public any // the *runtime.Runtime that wraps this engine: set by its New (Wrap) before it returns
}

// settings are a runtime's configuration, written by New before any other
// goroutine of the runtime starts and never again: every goroutine reads
// them without synchronisation.
type settings struct {
	order   *fairness.Order
	ranks   []fairness.Priority // frozen topological order, lowest first
	labels  []context.Context   // by rank: profiler labels priority=name
	regions []string            // by rank: execution-trace region types, "fairly priority=name"

	quantum, dealEvery, interrupt, budget time.Duration
	borrow, independent                   bool
	seed                                  uint64
	onPanic                               func(p fairness.Priority, value any, stack []byte)

	workers []*worker // the slice is fixed; each worker splits its own state (worker.go)
	epoch   time.Time // time 0 of now
}

// shared is the state of a runtime that any of its goroutines and its
// callers may touch at any time: each field is atomic, guarded by the lock
// beside it, or itself synchronised.
type shared struct {
	// The criterion in force: SetCriterion stores crit, then adds to
	// critVer; a worker adopts it at its next round (newRound).
	crit    atomic.Pointer[fairness.Criterion]
	critVer atomic.Uint64

	open openIndex // which workers' mailboxes are open, by rank (T4, worker.go)

	// Close's state (Q1-Q5): closeMu serialises Close; closing refuses new
	// work (Q4); stopping tells the workers to release their goroutines.
	closeMu  sync.Mutex
	closing  atomic.Bool
	stopping atomic.Bool

	roots     atomic.Int64             // submitted threads not yet finished (Submit, RunHere; Task.finish; Q2)
	suspended atomic.Int64             // threads parked off-processor (Await, Sleep, blocked Join; Q2)
	loose     atomic.Int32             // threads resumed after Await that run loose (loosen, R4)
	shareMask atomic.Pointer[critMask] // belowMask's, for the criterion in force
	moves     atomic.Uint64            // threads handed to another worker (Q1)
	gors      sync.WaitGroup           // every goroutine the runtime started, for Close
	steerSeq  atomic.Uint64            // where the scans of steer, takeFor and seize start, so that ties rotate
	ticker    *ticker                  // started by New, stopped by Close (ticker.go)
	onCPU     []cpuSlot                // by processor: the worker that last said it ran there (unstack); nil if unstack never moves
}

// osTuning is what a runtime changes in the process and the OS around it:
// Ps reserved in GOMAXPROCS (procs.go, P1-P3), short time slices and kicks (P4, P6) and
// the demotion of detached threads (revoke.go, M7-M8).
type osTuning struct {
	reserved int  // Ps reserved in GOMAXPROCS for the workers, 0 if none; fixed by New
	sliced   bool // holds a share of the process's short time slices for good; fixed by New
	demote   bool // demote detached threads that compute (Config.Demote); fixed by New
	compete  bool // holds a share of the short slices while others compete, unless sliced (procs.go); the ticker's adjust's, then Close's
	kicking  bool // holds a share of the kicks while computing goroutines outnumber the processors (kick_linux.go); the same
	extraPs  int  // Ps reserved beyond the workers (procs.go); the ticker's adjust's, then Close's

	detBusy  atomic.Int32 // detached goroutines that may compute: revokers add, each takes itself away as it comes back (detachEnded)
	detached detachedList // those of them that may be demoted, under its lock (M7)
	low      lowering     // ranks whose threads run in the idle class (lower.go)
}

// Of gives the engine behind a public *runtime.Runtime (nil for a nil one).
// Package runtime sets it when it loads; package thread calls it, so that
// the public type shows no engine method.
var Of func(public any) *Runtime

// Wrap records public, the *runtime.Runtime that wraps rt.
func (rt *Runtime) Wrap(public any) { rt.public = public }

// Public is the *runtime.Runtime that wraps rt.
func (rt *Runtime) Public() any { return rt.public }

// ProfileLabel is the profiler label (runtime/pprof) that the goroutines
// running threads carry, with the name of the thread's priority: a CPU
// profile splits by priority with go tool pprof -tagfocus=priority=NAME, or
// -tagroot=priority for a tree per priority.
const ProfileLabel = "priority"

// New starts a runtime with cfg, which package runtime validated.
func New(cfg Config) *Runtime {
	rt := &Runtime{
		settings: settings{
			order:       cfg.Order,
			ranks:       cfg.Order.Freeze(),
			quantum:     cfg.Quantum,
			dealEvery:   cfg.DealEvery,
			interrupt:   cfg.Interrupt,
			budget:      cfg.Budget,
			borrow:      cfg.Borrow,
			independent: cfg.Independent,
			seed:        cfg.Seed,
			onPanic:     cfg.OnPanic,
			epoch:       time.Now(),
		},
		osTuning: osTuning{demote: cfg.Demote, low: lowering{enabled: cfg.Demote && canRaise(), gors: map[*gor]struct{}{}}},
	}
	for _, p := range rt.ranks {
		rt.labels = append(rt.labels, pprof.WithLabels(context.Background(), pprof.Labels(ProfileLabel, p.String())))
		rt.regions = append(rt.regions, "fairly "+ProfileLabel+"="+p.String())
	}
	rt.crit.Store(cfg.Criterion)
	rt.workers = make([]*worker, cfg.Procs)
	rt.open = newOpenIndex(len(rt.ranks), cfg.Procs)
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt, i, cfg.Seed+uint64(i)*0x9e3779b97f4a7c15)
	}
	if cfg.Procs >= 2 && cfg.Procs <= numCPU {
		rt.onCPU = make([]cpuSlot, 64) // unstack's masks cover processors 0-63
	}
	if cfg.ReserveP {
		rt.reserved = cfg.Procs
		joinProcs(rt.reserved)
	}
	if cfg.ShortSlices {
		rt.sliced = true
		shortenSlices(true)
	}
	for _, w := range rt.workers {
		rt.newGor().start(w)
	}
	rt.ticker = startTicker(rt)
	return rt
}

// belowMask is lowMaskOf of the criterion in force: the ranks below a rank
// with a share (ranks from 64 up never are). It is computed once per
// criterion, by whoever asks first, for lowering (lower.go), unstack and
// loosen.
func (rt *Runtime) belowMask() uint64 {
	c := rt.crit.Load()
	m := rt.shareMask.Load()
	if m == nil || m.crit != c {
		m = &critMask{crit: c, below: lowMaskOf(c, rt.order, rt.ranks)}
		rt.shareMask.Store(m)
	}
	return m.below
}

// belowShare reports whether rank r is below a rank with a share in the
// criterion in force.
func (rt *Runtime) belowShare(r int) bool { return r >= 0 && r < 64 && rt.belowMask()>>uint(r)&1 != 0 }

// critMask is lowMaskOf of a criterion, kept with it.
type critMask struct {
	crit  *fairness.Criterion
	below uint64
}

// ReportPanic hands a panic that nobody will see otherwise to Config.OnPanic,
// or logs it. Package thread calls it; see Config.OnPanic.
func (rt *Runtime) ReportPanic(p fairness.Priority, value any, stack []byte) {
	if rt.onPanic != nil {
		rt.onPanic(p, value, stack)
		return
	}
	slog.Error("fairly: a thread panicked and nobody joins it", "priority", p.String(), "panic", fmt.Sprint(value), "stack", string(stack))
}

// Procs is the number of workers.
func (rt *Runtime) Procs() int { return len(rt.workers) }

// Ranks are the runtime's priorities in scheduling order, lowest first.
func (rt *Runtime) Ranks() []fairness.Priority { return rt.ranks }

// Order is the priority order the runtime schedules.
func (rt *Runtime) Order() *fairness.Order { return rt.order }

// Criterion is the fairness criterion in force.
func (rt *Runtime) Criterion() *fairness.Criterion { return rt.crit.Load() }

// SetCriterion replaces the fairness criterion while the runtime runs; each
// worker adopts it at its next round. The criterion must be over the
// runtime's order.
func (rt *Runtime) SetCriterion(c *fairness.Criterion) error {
	if c == nil || c.Order() != rt.order {
		return fmt.Errorf("%w: the criterion is nil or over another order", ErrInvalidConfig)
	}
	if rt.closing.Load() {
		return ErrClosed
	}
	rt.crit.Store(c)
	rt.critVer.Add(1)
	return nil
}

// Rank gives the scheduling rank of p (0 is the lowest) or an error for a
// priority this runtime does not schedule.
func (rt *Runtime) Rank(p fairness.Priority) (int, error) {
	r, ok := rt.order.Rank(p)
	if !ok || p.Order() != rt.order {
		return 0, fmt.Errorf("%w: %v is not a priority of this runtime", fairness.ErrForeignPriority, p)
	}
	return r, nil
}

// Close refuses new work (Submit, thread.Go and thread.Run then fail with
// ErrClosed), waits until every thread already given to the runtime has
// finished, and then stops the workers and every goroutine the runtime made.
// Threads blocked in Await must be released by their owner (close the
// listener or connection they read from) or Close waits for them. Close must
// not be called from inside a thread, nor from a function that Await runs:
// there it fails with ErrInThread (awaited.go). Calling it again returns
// nil.
func (rt *Runtime) Close() error {
	if rt.inThread() || inAwaited() {
		return ErrInThread
	}
	rt.closeMu.Lock()
	defer rt.closeMu.Unlock()
	if rt.stopping.Load() {
		return nil
	}
	rt.closing.Store(true)
	rt.hold() // for good: the threads that must end run in the normal class (O3)
	for !rt.quiescent() {
		time.Sleep(policy.ClosePoll)
	}
	rt.stopping.Store(true)
	rt.ticker.stop()
	for _, w := range rt.workers {
		w.wake()
	}
	rt.gors.Wait()
	if rt.reserved > 0 {
		leaveProcs(rt.reserved, rt.extraPs)
	}
	if rt.sliced {
		shortenSlices(false)
	}
	if rt.compete {
		rt.competing(false)
	}
	if rt.kicking {
		kick(false)
	}
	settleKicks()
	return nil
}

// competing takes (on) or drops the runtime's share of the short slices
// while threads of the normal class compete for the cores, unless it holds
// them for good (P4).
func (rt *Runtime) competing(on bool) {
	rt.compete = on
	if !rt.sliced {
		shortenSlices(on)
	}
}

// quiescent reports that no thread exists: none submitted and unfinished,
// none parked off-processor, and every worker asleep with nothing queued.
// Threads only reach a sleeping worker through a deal or steering, which
// count in moves. Invariants Q1-Q3 (PROTOCOLS.md): a scan during which
// moves did not change saw a consistent state, every path that adds to
// roots or suspended takes it away again, and a runtime with a thread
// anywhere is not quiescent.
func (rt *Runtime) quiescent() bool {
	moves := rt.moves.Load()
	if rt.roots.Load() != 0 || rt.suspended.Load() != 0 {
		return false
	}
	for _, w := range rt.workers {
		if w.sleeper.Load() == nil || w.inbox.n.Load() != 0 || w.mailFlag.Load() != 0 {
			return false
		}
	}
	return rt.moves.Load() == moves && rt.roots.Load() == 0 && rt.suspended.Load() == 0
}

// now is the time since the runtime started, from the monotonic clock.
func (rt *Runtime) now() int64 { return int64(time.Since(rt.epoch)) }

// osSlices counts the live runtimes that shortened the process's time slices
// (setSlices): the first shortens them, the last Close gives the default
// back.
var osSlices struct {
	sync.Mutex
	users int
}

// shortenSlices takes (on) or drops a share of the short time slices.
func shortenSlices(on bool) {
	osSlices.Lock()
	defer osSlices.Unlock()
	if on {
		osSlices.users++
	} else {
		osSlices.users--
	}
	if n := osSlices.users; on && n == 1 || !on && n == 0 {
		setSlices(on)
	}
}
