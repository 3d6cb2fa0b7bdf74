// Package runtime starts and stops fairly's scheduler: a fixed set of
// workers that run prioritised threads with the algorithm of "Fairness in
// Responsive Parallelism" (Muller, Westrick, Acar, ICFP 2019), adapted to Go.
//
// A program makes one Runtime with New, runs threads on it with package
// thread, may re-weight its priorities with SetCriterion and read what each
// got with Stats, and releases it with Close. The scheduler itself lives in
// fairly's internal/engine (see docs/design.md).
package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/engine"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// Defaults of the scheduling parameters, as in the paper (§5.2): a round of
// 5 ms, a deal every 100 µs, an interrupt every 1 ms.
const (
	DefaultRoundQuantum = policy.DefaultQuantum
	DefaultDealInterval = policy.DefaultDealInterval
	DefaultInterrupt    = policy.DefaultInterrupt
)

// Errors returned by the runtime. Use errors.Is to test for them.
var (
	// ErrClosed is returned for work given to a runtime that is closing or closed.
	ErrClosed = engine.ErrClosed
	// ErrInvalidConfig is returned by New for a configuration it cannot use.
	ErrInvalidConfig = engine.ErrInvalidConfig
	// ErrInThread is returned by Close called from a thread of the runtime,
	// or from a function that thread.Await or thread.AwaitContext runs for
	// a thread (of any runtime: the call does not tell which thread it
	// serves): Close waits for every thread, that one included, so it could
	// never return. Close the runtime from the goroutine that made it.
	ErrInThread = engine.ErrInThread
	// ErrNotStarted is returned by the methods of a nil or zero Runtime,
	// which New did not make.
	ErrNotStarted = errors.New("fairly: runtime not made by runtime.New")
)

// ProfileLabel is the profiler label (runtime/pprof) that the goroutines
// running threads carry, with the name of the thread's priority: a CPU
// profile splits by priority with go tool pprof -tagfocus=priority=NAME, or
// -tagroot=priority for a tree per priority.
const ProfileLabel = "priority" // the engine sets it; TestProfileLabels checks they agree

// MaxProcs is the largest Procs New accepts. Each worker holds a goroutine,
// banks and mailboxes for every priority, and a Go processor; far more
// workers than cores only time-share the cores.
const MaxProcs = 1024

// MaxDuration is the longest RoundQuantum, DealInterval, Interrupt and
// PromptBudget New accepts. The scheduler adds them to clock readings and
// keeps a record of recent use over 128 rounds: much longer ones would
// overflow, and a deal interval or quantum that overflows acts as the
// shortest one, not as never.
const MaxDuration = 24 * time.Hour

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
	// PromptBudget is how much processor time per round a worker may lend at
	// most to ready threads of each priority higher than its primary one, so
	// that they respond at once instead of at the next round (default: the
	// whole round). A priority borrows only while its processor time on the
	// worker lately (about the last 128 rounds) is below its share of the
	// criterion, so that borrowing never gives it more than its share; the
	// budget caps what one round lends on top of that. Each such priority
	// has a budget of its own, so that a busy middle priority cannot spend
	// the top one's. With k priorities above the primary one that have
	// shares, a budget bounds the primary priority's stretch within one
	// round to 1/(1-k·PromptBudget/RoundQuantum).
	PromptBudget time.Duration
	// NoPromptBorrowing turns that lending off, leaving the paper's behaviour:
	// higher-priority threads run on workers whose primary priority they are,
	// or by donation.
	NoPromptBorrowing bool
	// KeepGOMAXPROCS stops the runtime from changing GOMAXPROCS. By default
	// New raises it to Procs+4: the free Ps are what let timers, the
	// network poller and Await-ed calls wake up promptly while every worker
	// computes; without them they can wait for Go's own 10 ms preemption.
	// Four, not one, so that a goroutine that starts to compute beside the
	// workers leaves Ps free until the runtime reserves one for it.
	// While other goroutines compute beside the workers (the program's own,
	// or threads detached from their worker by a long library call; see
	// docs/design.md), the ticker raises it by one for each, up to the
	// number of processors, so that a P stays free, and lowers it again
	// once they have been gone for a second or more: a steady load changes
	// it once. The value the program sets, before New or at any time after,
	// is the floor: the runtime only adds Ps above it, and the last Close
	// goes back to it.
	KeepGOMAXPROCS bool
	// ShortTimeSlices makes New ask Linux (6.12 and later) for the shortest
	// time slice, 0.1 ms, for every thread of the process while a runtime
	// lives. A thread that wakes up (the network poller, a timer, a resumed
	// Await) then preempts a busy one at once instead of waiting up to a
	// scheduler tick, often 4 ms. It helps the top priority beside library
	// calls without preemption points, and costs cooperative code a longer
	// echo latency; docs/tuning.md has the figures. Slices change no thread's share of
	// processor time, and any process may set them on its own threads. The
	// last Close gives the threads the default slice back. Without it, the
	// runtime takes the short slices only while goroutines outside its
	// workers compute (see KeepGOMAXPROCS) or Go's collector runs, unless
	// KeepOSPriority is set.
	ShortTimeSlices bool
	// KeepOSPriority stops the runtime from demoting, on Linux, the OS
	// thread of a thread that computes detached from its worker (a long
	// library call that a more urgent thread preempted; see
	// docs/design.md) to the idle scheduling class, SCHED_IDLE, while Go's
	// collector has started no cycle for a couple of seconds (a stop of the
	// world waits for a demoted call to return). Demoted,
	// such a thread gets a core only when no other thread of the machine
	// wants it, so that the network poller and timers that wake the top
	// priority never wait behind it. Its thread gets its normal policy back
	// when it next reaches a preemption point if the process may do that
	// (CAP_SYS_NICE or RLIMIT_NICE); otherwise it runs demoted until it
	// ends. Set it when other processes keep every core busy: a demoted
	// thread then waits for them, and so does Go's stop-the-world.
	//
	// It also turns off three more of the runtime's changes to the OS's
	// defaults. Short time slices for the process's threads while
	// goroutines outside its workers compute or Go's collector runs
	// (without them the network poller's thread waits for their slices, or
	// the collector's mark workers, to end; see ShortTimeSlices).
	// Kicks: meanwhile, while those goroutines and the busy workers
	// outnumber the processors, a kicker thread on each processor wakes
	// every 200 µs, so that Linux looks at the core and a woken thread
	// that lost its pick does not wait for a scheduler tick. And lowering:
	// where the process may give a
	// thread its normal policy back, a worker's OS thread runs in the idle
	// class while it runs a priority below one with a share in the
	// criterion, so that the threads that wake the top priority take its
	// core at once; lowering is off while the collector works, while
	// goroutines outside the workers compute, and for a second after a
	// lowered thread was kept from the processors by other processes.
	KeepOSPriority bool
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
// with New and release it with Close; threads run on it through package
// thread.
type Runtime struct {
	e *engine.Runtime
}

func init() {
	engine.Of = func(public any) *engine.Runtime {
		if rt, _ := public.(*Runtime); rt != nil {
			return rt.e
		}
		return nil
	}
}

// New starts a runtime. It returns an error wrapping ErrInvalidConfig for
// durations out of [0, MaxDuration], Procs out of [0, MaxProcs], a
// Criterion over another order than Order, or an unusable order.
func New(cfg Config) (*Runtime, error) {
	if cfg.Procs < 0 || cfg.Procs > MaxProcs {
		return nil, fmt.Errorf("%w: Procs %d is not in [0, %d]", ErrInvalidConfig, cfg.Procs, MaxProcs)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"RoundQuantum", cfg.RoundQuantum}, {"DealInterval", cfg.DealInterval}, {"Interrupt", cfg.Interrupt}, {"PromptBudget", cfg.PromptBudget}} {
		if d.v < 0 || d.v > MaxDuration {
			return nil, fmt.Errorf("%w: %s %v is not in [0, %v]", ErrInvalidConfig, d.name, d.v, MaxDuration)
		}
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
	ec := engine.Config{
		Procs:       cfg.Procs,
		Order:       order,
		Criterion:   crit,
		Quantum:     orDefault(cfg.RoundQuantum, DefaultRoundQuantum),
		DealEvery:   orDefault(cfg.DealInterval, DefaultDealInterval),
		Interrupt:   orDefault(cfg.Interrupt, DefaultInterrupt),
		Borrow:      !cfg.NoPromptBorrowing,
		Independent: cfg.IndependentRounds,
		ReserveP:    !cfg.KeepGOMAXPROCS,
		ShortSlices: cfg.ShortTimeSlices,
		Demote:      !cfg.KeepOSPriority,
		Seed:        cfg.Seed,
		OnPanic:     cfg.OnPanic,
	}
	if ec.Procs == 0 {
		ec.Procs = engine.BaseProcs()
	}
	ec.Budget = orDefault(cfg.PromptBudget, time.Duration(policy.DefaultBudget(int64(ec.Quantum))))
	if ec.Seed == 0 {
		ec.Seed = uint64(time.Now().UnixNano())
	}
	rt := &Runtime{e: engine.New(ec)}
	rt.e.Wrap(rt)
	return rt, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// started reports whether New made rt.
func (rt *Runtime) started() bool { return rt != nil && rt.e != nil }

// Procs is the number of workers (0 for a Runtime New did not make).
func (rt *Runtime) Procs() int {
	if !rt.started() {
		return 0
	}
	return rt.e.Procs()
}

// Order is the priority order the runtime schedules (nil for a Runtime New
// did not make).
func (rt *Runtime) Order() *fairness.Order {
	if !rt.started() {
		return nil
	}
	return rt.e.Order()
}

// Criterion is the fairness criterion in force (nil for a Runtime New did
// not make).
func (rt *Runtime) Criterion() *fairness.Criterion {
	if !rt.started() {
		return nil
	}
	return rt.e.Criterion()
}

// SetCriterion replaces the fairness criterion while the runtime runs; each
// worker adopts it at its next round. The criterion must be over the
// runtime's order (else an error wrapping ErrInvalidConfig); a closed
// runtime returns ErrClosed.
func (rt *Runtime) SetCriterion(c *fairness.Criterion) error {
	if !rt.started() {
		return ErrNotStarted
	}
	return rt.e.SetCriterion(c)
}

// Close refuses new work (thread.Go and thread.Run then fail with
// ErrClosed), waits until every thread already given to the runtime has
// finished, and then stops the workers and every goroutine the runtime made.
// Threads blocked in Await must be released by their owner (close the
// listener or connection they read from, or cancel their context) or Close
// waits for them. Close must not be called from inside a thread, nor from a
// function that thread.Await or thread.AwaitContext runs: there it fails
// with ErrInThread and does nothing. Calling it again returns nil; a
// Runtime that New did not make returns ErrNotStarted.
func (rt *Runtime) Close() error {
	if !rt.started() {
		return ErrNotStarted
	}
	return rt.e.Close()
}

// Rank gives the scheduling rank of p (0 is the lowest) in the total order
// the runtime uses, or an error wrapping fairness.ErrForeignPriority for a
// priority it does not schedule: a check for code that takes priorities
// from its users (jobs, fairlyhttp).
func (rt *Runtime) Rank(p fairness.Priority) (int, error) {
	if !rt.started() {
		return 0, ErrNotStarted
	}
	return rt.e.Rank(p)
}

// ReportPanic hands a panic that nobody would see otherwise to
// Config.OnPanic, or logs it with log/slog. fairly's own packages call it
// (thread for detached threads, fairlyhttp for handlers); code that
// recovers a thread's panic and cannot return it may too.
func (rt *Runtime) ReportPanic(p fairness.Priority, value any, stack []byte) {
	if rt.started() {
		rt.e.ReportPanic(p, value, stack)
	}
}

// InThread reports whether the calling goroutine runs a thread's code (of
// any runtime): there, blocking waits such as Handle.Wait would hold a
// worker, and package thread refuses them.
func InThread() bool { return engine.InThread() }
