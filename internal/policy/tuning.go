package policy

import "time"

// The tuning constants of the engine (internal/engine) and the simulator
// (internal/sim), in one place: both use these names, and sim.DefaultParams
// derives from them, so that the simulator runs with the runtime's values.
// Each says where its value comes from: the paper (Muller, Westrick, Acar,
// ICFP 2019, §5.2), a measurement (a section of docs/results.md or
// docs/simulation.md; a section that the results page no longer holds is in
// its version before it was rewritten for users, `git show
// 04ac75d:docs/results.md`), or a choice nothing measured yet, said as such.

// Ranks that are not priority ranks.
const (
	// NoRank is not a rank: nothing runs (the scheduling loop between
	// threads, or an idle worker), or no rank has work.
	NoRank = -1
	// AboveAll is above every rank (ranks are counted in an int32 and a
	// criterion has far fewer): a request's flag for "any rank" (Request)
	// and the rank the watchdog revokes below (WatchdogBelow).
	AboveAll = 1 << 30
)

// Defaults of the scheduling parameters, which runtime.Config overrides;
// the runtime package exports them as DefaultRoundQuantum,
// DefaultDealInterval and DefaultInterrupt.
const (
	// DefaultQuantum is the length of a round, as in the paper's text
	// (§5.2).
	DefaultQuantum = 5 * time.Millisecond
	// DefaultDealInterval is the time between two deals of a worker, as in
	// the paper's text (§5.2).
	DefaultDealInterval = 100 * time.Microsecond
	// DefaultInterrupt is the ticker's period, as in the paper's text
	// (§5.2).
	DefaultInterrupt = 1 * time.Millisecond
)

// Preemption points and the scheduling loop.
const (
	// CheckEvery is how many preemption points pass between two passes
	// through the scheduler when nothing raised a worker's attention word
	// (the pass reads the clock, which decides rounds and deals). Chosen
	// with the first scheduling loop and not tuned since: a point that is
	// not due costs one atomic load and a decrement, and every event that
	// needs the worker sooner (a deal, a request, a steered thread, the
	// ticker) raises the word instead of waiting for the count.
	CheckEvery = 64
	// PassEvery is about how often a thread's preemption points pass
	// through the scheduler when nothing raises the attention word: the
	// count of points between passes adapts (Pace), from CheckEvery down
	// to one, so that a thread that computes tens of microseconds between
	// points (a time sink) still offers its OS processor every
	// OSYieldEvery or so; such a pass does nothing else, and the duties
	// still come every CheckEvery points. At a fixed count it offered it
	// once an interrupt, and a thread woken onto its core (the network
	// poller's, the echo driver's) waited that long: Linux does not preempt
	// a thread of the normal class within its time slice for a woken one.
	PassEvery = 50 * time.Microsecond
	// PollEvery is how many polls of forks and loop iterations pass, when
	// nothing raised the attention word, before a loop passes through the
	// scheduler or a fork offers its OS processor (engine.Forks.Point): a
	// computation that only forks would otherwise offer it once an
	// interrupt instead of every OSYieldEvery. Chosen as a few
	// microseconds of forking (docs/design.md, "The fork path").
	PollEvery = 1024
	// OSYieldEvery is how often a busy worker offers its OS processor
	// (sched_yield) to other threads, so that the free P's OS thread (the
	// network poller's, timers', Await-ed calls') need not wait a whole
	// time slice for a core. Measured against 200 µs (an Await-ed event's
	// p99 under full load at P = 2) and 50 µs (the echo's p99 beside
	// fine-grained fib at P = 2, paired runs), with no loss of fib's
	// throughput (docs/design.md at a27d125, "Offering the OS processor").
	OSYieldEvery = 20 * time.Microsecond
	// IdleSpin is how long an idle worker watches for work (yielding its
	// OS processor, never entering Go's scheduler) before it parks: dealt
	// work often follows a request within microseconds, and a parked
	// worker wakes too late for it. A choice, not measured against other
	// values; the simulator models it as a reaction time (Costs.SpinWake
	// within it, Costs.Wake after, docs/simulation.md "Cost parameters").
	IdleSpin = 50 * time.Microsecond
	// MaxSpares bounds the parked spare goroutines a worker keeps; a
	// goroutine that finds the list full exits instead. A choice: enough
	// for the hand-offs of one burst of joins, few enough that an idle
	// runtime keeps little.
	MaxSpares = 8
	// MaxCallers bounds the goroutine records a worker keeps for RunHere
	// (their lazy stacks stay warm for the next caller). A choice.
	MaxCallers = 2
	// WaitSpin is how long Wait and WaitContext look for the end of a
	// thread before they park the caller: a thread given to a worker often
	// ends sooner than a parked OS thread takes to wake. Measured against
	// 5 µs and 10 µs with BenchmarkRunBusy/go+wait at P = 1 and 2
	// (docs/results.md, "Starting and resuming threads"). The look costs
	// the caller's processor at most that long, and it yields between
	// looks.
	WaitSpin = 20 * time.Microsecond
	// ClosePoll is how often Close looks whether the runtime is quiescent
	// (PROTOCOLS.md, Q): a choice, short beside a thread's life and long
	// beside the look.
	ClosePoll = 200 * time.Microsecond
)

// Revocation and the watchdog.
const (
	// StaleAfter is how long a worker may go without a preemption point
	// before an arriving thread of higher priority takes its token instead
	// of waiting, and how long a detached goroutine computes before its OS
	// thread is demoted: several deal intervals, well above the gap between
	// points of cooperative code (microseconds), well below the promptness
	// goal of a millisecond. A choice from those bounds, not a sweep.
	StaleAfter = 250 * time.Microsecond
	// StallTicks is how many ticks without a preemption point the watchdog
	// waits before it acts (Watchdog): one tick may end right after the
	// worker's last point. A choice.
	StallTicks = 2
	// ComputingFraction: the watchdog takes a stuck thread for computing
	// when it ran at least 1/ComputingFraction of the time since the
	// previous sample (or is runnable now); a blocked one runs next to
	// nothing, and on a machine that other processes keep busy a computing
	// one may get much less than all of it. A choice.
	ComputingFraction = 8
)

// CollectorQuiet is how long after the collector started a cycle the
// ticker leaves detached threads undemoted (engine's revoke.go,
// "Demotion"). Beside a load that allocates, 200 ms still let the
// demotion hold up the stops of the world between cycles; 2 s keeps it
// off while a program collects at all often, and on for library calls
// that do not allocate (docs/results.md, "The prompt experiment"). Two
// values tried, not a sweep.
const CollectorQuiet = 2 * time.Second

// Prompt borrowing.
const (
	// UsageShift sets how far back a worker's record of each rank's
	// processor time reaches (see Decay and MayBorrow): every round start
	// keeps 1 - 1/2^UsageShift of it, so the record weighs about the last
	// 2^UsageShift rounds. Shorter, an interactive priority's bursts (the
	// backlog after a collector's pause) took it over its share for a
	// while though it used well under it on average. Chosen with the share
	// rule of borrowing (docs/design.md, "Prompt borrowing"), not swept.
	UsageShift = 7
)

// Deals and requests.
const (
	// AskTries is how many random workers an asking worker draws, at most,
	// to find one that is awake, and a random deal to find one that wants
	// work: a sleeping worker never serves a request, and after a barrier
	// most workers sleep (simulator findings 1 and 6, docs/simulation.md).
	AskTries = 4
)

// Steering scores: a thread arriving from outside the workers goes to the
// worker of the highest score (SteerScore). Only their order matters, and
// it is fairly's, not the paper's (docs/design.md, "Steering"): the classes
// are a thousand apart, more than the running rank by which a score is
// lowered within its class, so that they never mix while a runtime has
// fewer than a thousand priorities; a stale worker's penalty puts it below
// every class, and revokeBelow lies between the two.
const (
	scoreDonating = 4000   // primary is the thread's rank and runs another
	scoreAsleep   = 3000   // sleeps
	scorePrimary  = 2000   // primary is the thread's rank
	scoreStale    = -10000 // no preemption point for StaleAfter
	// revokeBelow: a best score below it means every candidate is stale,
	// so the chosen worker's token is revoked.
	revokeBelow = -5000
)

// Operating-system tuning (engine's procs.go and osthread_linux.go).
const (
	// ShortSlice is the time slice, in nanoseconds (sched_runtime), that
	// the runtime asks of Linux for every thread of the process while
	// goroutines outside the workers compute, or for good with
	// runtime.Config.ShortTimeSlices: the shortest a fair-class thread may
	// have. Linux 6.12 and later schedule such threads by EEVDF: a running
	// thread is preempted when another wakes only if it has used up its
	// slice, else the woken one waits for the next scheduler tick (4 ms at
	// HZ=250). The default slice is 0.7 to 3 ms, so a woken thread, Go's
	// network poller that must wake the top priority above all, waited for
	// a tick about as often as not while every core ran a worker or code
	// without preemption points; with 0.1 ms it waits only if the running
	// thread was picked less than 0.1 ms ago. A slice does not change any
	// thread's share of processor time; older kernels ignore it
	// (docs/design.md, "Short slices while others compute").
	ShortSlice = 100_000
	// KickEvery is how often a kicker thread wakes on each processor while
	// goroutines of the normal class outnumber the cores (engine,
	// kick_linux.go): a woken thread that lost its core's pick to one that
	// waited longer is picked at the next wake-up there, instead of the
	// next scheduler tick (4 ms at HZ=250), so the top priority's tail
	// beside such a crowd follows this period. Shorter costs the computing
	// threads more: each kick is a wake-up and two switches on every
	// processor (docs/design.md, "Kicks while others compute").
	KickEvery = 200 * time.Microsecond
	// SpareProcs is how many Ps the runtimes of a process keep free beyond
	// their workers and the Ps reserved for others (engine, procs.go,
	// P1): idle, they watch the network and the timers. One is not
	// enough. The reservation for others comes only after OthersFor and
	// needs the ticker, a goroutine, to run; whatever starts to compute
	// meanwhile (an ordinary goroutine, a library call detached from its
	// worker, a goroutine Go preempted onto its global run queue, the
	// collector's workers) takes a free P, and with the one spare taken
	// the ticker waited too, behind the poller's readers, for Go's 10 ms
	// preemption: execution traces of the prompt experiment show it as a
	// load starts. Four is what the experiment's hand-tuned control
	// keeps; alternated runs beside library calls, the allocating load
	// and ordinary goroutines measured four against one, and against
	// three more kept only once others were seen (docs/results.md, "The
	// prompt experiment"). An idle P costs no processor time.
	SpareProcs = 4
	// OthersFor is how long every tick must see goroutines outside the
	// workers computing before the ticker reserves Ps for them:
	// goroutines that run for a few milliseconds (a program starting up, a
	// request's handler, a hand-off) do not take the spare P for long
	// enough to be worth a stop of the world. In time, not ticks: while
	// the spare P is taken the ticker itself runs late, up to Go's own
	// preemption period, which is this value.
	OthersFor = 10 * time.Millisecond
	// StarveWindow is how long a lowered holder must have waited for a
	// processor before lowering yields to a busy machine (O5): several
	// ticks, so that the wake-ups that lowering exists for, each taking the
	// holder's core for a moment, do not look like starvation.
	StarveWindow = 5 * time.Millisecond
	// CalmWindow is how long the need for Ps must stay lower before they
	// are given back, doubled at each change up to MaxCalm, which bounds
	// how often GOMAXPROCS changes (docs/design.md, "The GOMAXPROCS
	// policy"). A choice.
	CalmWindow = time.Second
	// MaxCalm bounds CalmWindow's doubling.
	MaxCalm = 16 * time.Second
)
