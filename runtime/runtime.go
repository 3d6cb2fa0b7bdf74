// Package runtime is fairly's scheduler: a fixed set of workers that run
// prioritised threads with the algorithm of "Fairness in Responsive
// Parallelism" (Muller, Westrick, Acar, ICFP 2019), adapted to Go.
//
// Most programs use it only through New, Close, SetCriterion and Stats, and
// create threads with package thread. The scheduling loop is in sched.go, the
// goroutine hand-off that lets threads block in goroutines.go, preemption
// points in preempt.go, and the ticker and watchdog in ticker.go.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
)

// Defaults of the scheduling parameters, as in the paper (§5.2).
const (
	DefaultRoundQuantum = 5 * time.Millisecond
	DefaultDealInterval = 100 * time.Microsecond
	DefaultInterrupt    = 1 * time.Millisecond
)

// Errors returned by the runtime. Use errors.Is to test for them.
var (
	// ErrClosed is returned for work given to a runtime that is closing or closed.
	ErrClosed = errors.New("fairly: runtime closed")
	// ErrInvalidConfig is returned by New for a configuration it cannot use.
	ErrInvalidConfig = errors.New("fairly: invalid runtime configuration")
	// ErrInThread is returned by Close called from a thread of the runtime:
	// Close waits for every thread, that one included, so it could never
	// return. Close the runtime from the goroutine that made it.
	ErrInThread = errors.New("fairly: Close called from inside a thread of the runtime")
)

// Config describes a runtime. The zero value is usable: GOMAXPROCS workers,
// an order with only Top and Bottom, equal shares and the paper's timings.
type Config struct {
	// Procs is the number of workers, that is the number of threads that run
	// at once. 0 means GOMAXPROCS; at most MaxProcs.
	Procs int
	// Order holds the priorities threads may use. nil means the Criterion's
	// order, or a fresh order with only Top and Bottom.
	Order *fairness.Order
	// Criterion gives each priority its share of processor time. nil means
	// equal shares for every priority of Order.
	Criterion *fairness.Criterion
	// RoundQuantum is how long a worker keeps the primary priority it drew
	// (default 5 ms).
	RoundQuantum time.Duration
	// DealInterval is how often a busy worker tries to send spare threads to
	// another worker (default 100 µs). Deals also happen at once when an idle
	// worker asks for work.
	DealInterval time.Duration
	// Interrupt is the ticker period (default 1 ms): at each tick every busy
	// worker is asked to pass through the scheduler at its next preemption
	// point, and the watchdog looks for stalled workers.
	Interrupt time.Duration
	// PromptBudget is how much processor time per round a worker may lend to
	// ready threads of a priority higher than its primary one, so that they
	// respond at once instead of at the next round (default RoundQuantum/20).
	// It bounds the extra stretch of the primary priority to
	// 1/(1-PromptBudget/RoundQuantum).
	PromptBudget time.Duration
	// NoPromptBorrowing turns that lending off, leaving the paper's behaviour:
	// higher-priority threads run on workers whose primary priority they are,
	// or by donation.
	NoPromptBorrowing bool
	// KeepGOMAXPROCS stops New from raising GOMAXPROCS to Procs+1. The free
	// P is what lets timers, the network poller and Await-ed calls wake up
	// promptly while every worker computes; without it they can wait for
	// Go's own 10 ms preemption. While threads run detached from their
	// worker (a long library call, see docs/design.md), the watchdog raises
	// it by one for each, up to 2×Procs+1, and lowers it again after.
	KeepGOMAXPROCS bool
	// IndependentRounds makes each worker draw its own primary priority each
	// round, as in the paper, instead of all workers sharing the draw of an
	// aligned round (see docs/design.md).
	IndependentRounds bool
	// Seed makes the workers' random choices repeatable (0 picks one from the clock).
	Seed uint64
	// OnPanic receives the panics that no Join or Wait will return: of a
	// thread started with thread.Detach, and of a thread whose handle was
	// collected before any Join or Wait returned its error. It is called
	// from a goroutine of the runtime or of the collector and must not
	// block. nil logs them with log/slog at level Error, with the stack.
	OnPanic func(p fairness.Priority, value any, stack []byte)
}

// Runtime is a set of workers running fairly prompt scheduling. Create it
// with New and release it with Close.
type Runtime struct {
	order   *fairness.Order
	ranks   []fairness.Priority // frozen topological order, lowest first
	labels  []context.Context   // by rank: profiler labels priority=name
	crit    atomic.Pointer[fairness.Criterion]
	critVer atomic.Uint64

	quantum, dealEvery, interrupt, budget time.Duration
	borrow, independent                   bool
	seed                                  uint64

	workers []*worker
	epoch   time.Time

	closeMu  sync.Mutex
	closing  atomic.Bool
	stopping atomic.Bool
	closed   chan struct{}

	roots     atomic.Int64 // submitted threads not yet finished
	suspended atomic.Int64 // threads parked off-processor (Await, Sleep, blocked Join)
	gors      sync.WaitGroup
	ticker    *ticker
	steerSeq  atomic.Uint64
	moves     atomic.Uint64 // threads handed to another worker, for Close
	onPanic   func(p fairness.Priority, value any, stack []byte)
	reserved  int          // Ps reserved in GOMAXPROCS for the workers, 0 if none
	extraPs   int          // Ps reserved for detached threads; the ticker's, then Close's
	detBusy   atomic.Int32 // detached goroutines that may compute (revoke.go)
}

// ProfileLabel is the profiler label (runtime/pprof) that the goroutines
// running threads carry, with the name of the thread's priority: a CPU
// profile splits by priority with go tool pprof -tagfocus=priority=NAME, or
// -tagroot=priority for a tree per priority.
const ProfileLabel = "priority"

// MaxProcs is the largest Procs New accepts. Each worker holds a goroutine,
// banks and mailboxes for every priority, and a Go processor; far more
// workers than cores only time-share the cores.
const MaxProcs = 1024

// New starts a runtime. It returns an error wrapping ErrInvalidConfig for
// negative durations, Procs out of [0, MaxProcs], a Criterion over another order than Order,
// or an unusable order.
func New(cfg Config) (*Runtime, error) {
	if cfg.Procs < 0 || cfg.Procs > MaxProcs {
		return nil, fmt.Errorf("%w: Procs %d is not in [0, %d]", ErrInvalidConfig, cfg.Procs, MaxProcs)
	}

	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"RoundQuantum", cfg.RoundQuantum}, {"DealInterval", cfg.DealInterval}, {"Interrupt", cfg.Interrupt}, {"PromptBudget", cfg.PromptBudget}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, d.name, d.v)
		}
	}
	procs := cfg.Procs
	if procs == 0 {
		procs = baseProcs()
	}
	order, crit := cfg.Order, cfg.Criterion
	switch {
	case order == nil && crit != nil:
		order = crit.Order()
	case order == nil:
		order = fairness.NewOrder()
	case crit != nil && crit.Order() != order:
		return nil, fmt.Errorf("%w: the criterion is over another order", ErrInvalidConfig)
	}
	if crit == nil {
		crit = fairness.Uniform(order)
	}
	rt := &Runtime{
		order:     order,
		ranks:     order.Freeze(),
		quantum:   orDefault(cfg.RoundQuantum, DefaultRoundQuantum),
		dealEvery: orDefault(cfg.DealInterval, DefaultDealInterval),
		interrupt: orDefault(cfg.Interrupt, DefaultInterrupt),
		borrow:    !cfg.NoPromptBorrowing,
		epoch:     time.Now(),
		closed:    make(chan struct{}),
	}
	rt.budget = orDefault(cfg.PromptBudget, rt.quantum/20)
	for _, p := range rt.ranks {
		rt.labels = append(rt.labels, pprof.WithLabels(context.Background(), pprof.Labels(ProfileLabel, p.String())))
	}
	rt.crit.Store(crit)
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rt.seed, rt.independent = seed, cfg.IndependentRounds
	rt.onPanic = cfg.OnPanic
	rt.workers = make([]*worker, procs)
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt, i, seed+uint64(i)*0x9e3779b97f4a7c15)
	}
	if !cfg.KeepGOMAXPROCS {
		rt.reserved = procs
		reserveP(rt.reserved)
	}
	for _, w := range rt.workers {
		rt.newGor().start(w)
	}
	rt.ticker = startTicker(rt)
	return rt, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
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
// not be called from inside a thread: there it fails with ErrInThread.
// Calling it again returns nil.
func (rt *Runtime) Close() error {
	if rt.inThread() {
		return ErrInThread
	}
	rt.closeMu.Lock()
	defer rt.closeMu.Unlock()
	if rt.stopping.Load() {
		return nil
	}
	rt.closing.Store(true)
	for !rt.quiescent() {
		time.Sleep(200 * time.Microsecond)
	}
	rt.stopping.Store(true)
	rt.ticker.stop()
	for _, w := range rt.workers {
		w.wake()
	}
	rt.gors.Wait()
	close(rt.closed)
	if rt.reserved+rt.extraPs > 0 {
		releaseP(rt.reserved + rt.extraPs)
	}
	return nil
}

// quiescent reports that no thread exists: none submitted and unfinished,
// none parked off-processor, and every worker asleep with nothing queued.
// Threads only reach a sleeping worker through a deal or steering, which
// count in moves, so a scan during which moves did not change saw a
// consistent state.
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

// GOMAXPROCS reservation, shared by every live runtime of the process.
var maxprocs struct {
	sync.Mutex
	workers  int // workers of the live runtimes that reserved
	original int // GOMAXPROCS before the first of them
}

// baseProcs is GOMAXPROCS as the program set it, not as raised by runtimes.
func baseProcs() int {
	maxprocs.Lock()
	defer maxprocs.Unlock()
	if maxprocs.workers > 0 {
		return maxprocs.original
	}
	return goruntime.GOMAXPROCS(0)
}

// reserveP raises GOMAXPROCS so that one P stays free for wake-ups while
// the workers of every live runtime compute: to the sum of their workers
// plus one, if that is more than it was.
func reserveP(workers int) {
	maxprocs.Lock()
	defer maxprocs.Unlock()
	if maxprocs.workers == 0 {
		maxprocs.original = goruntime.GOMAXPROCS(0)
	}
	maxprocs.workers += workers
	if n := maxprocs.workers + 1; goruntime.GOMAXPROCS(0) < n {
		goruntime.GOMAXPROCS(n)
	}
}

// releaseP drops a reservation: the last one restores the GOMAXPROCS the
// process had before; others lower it to what the remaining reservations
// need, never below that original.
func releaseP(workers int) {
	maxprocs.Lock()
	defer maxprocs.Unlock()
	maxprocs.workers -= workers
	if maxprocs.workers == 0 {
		goruntime.GOMAXPROCS(maxprocs.original)
		return
	}
	if n := max(maxprocs.workers+1, maxprocs.original); goruntime.GOMAXPROCS(0) > n {
		goruntime.GOMAXPROCS(n)
	}
}
