// Package harness runs the experiments of fairly's benchmark suite, after
// the evaluation of "Fairness in Responsive Parallelism" (§6), and writes
// their report: markdown tables and PNG charts.
//
// The experiments, each at every processor count of Config.Procs:
//
//   - table1: stretch. Three priorities: a network echo at high priority, a
//     time sink (a parallel computation that never ends) at medium and a
//     compute kernel at low. Stretch is the kernel's time with the others
//     over its time alone, against the expected 1/F(low) for each criterion.
//   - table2: speedups of the kernels alone on fairly, over their sequential
//     baseline and over their plain-goroutine version.
//   - table3: winner-take-all. Echo at high, kernel at low, every share to
//     the high priority: speedup and response times.
//   - table4: the runs of table1 normalised: speedup times expected stretch,
//     with the echo's response times.
//   - table5: Fibonacci at fine grain (a fork at every call) and coarse
//     grain (sequential at n ≤ 12), forking with thread.Fork2 on fairly and
//     a goroutine on plain Go, with a network echo at high priority and
//     criterion 50-50, against plain goroutines, and an idle baseline.
//   - fig8: actual over expected stretch per kernel (the runs of table1).
//   - fig9: terminal echo response time against the interactive share.
//   - stall: network echo response time beside low-priority threads in
//     library calls that never reach a preemption point.
//   - http (optional, see OptionalExperiments): an HTTP endpoint beside a
//     CPU-heavy batch on net/http, fairlyhttp and a cpuworker-style limiter.
//   - collector (optional): table5's fine-grained fairly setting forking with
//     thread.Spawn (two allocations a fork) and with thread.Fork2 (none),
//     with the collector's cycles per second and longest pause.
//
// Response times are always measured by the driver (package driver) in a
// process of its own, over loopback TCP or its standard input and output.
// Config.Driver says how to start it.
package harness

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
)

// ErrConfig is matched (errors.Is) by the errors of Config.Validate and of
// the parsers of this package. Their messages say only what is wrong, for a
// command to print after its own name.
var ErrConfig = errors.New("invalid benchmark configuration")

// configError is a problem with a configuration; it matches ErrConfig.
type configError struct{ msg string }

func (e *configError) Error() string        { return e.msg }
func (e *configError) Is(target error) bool { return target == ErrConfig }

// badConfig gives a configError with a formatted message.
func badConfig(format string, a ...any) error { return &configError{fmt.Sprintf(format, a...)} }

// Bounds of a Config: beyond them a run is a mistake, not an experiment.
const (
	MaxProcs          = 256             // processor counts
	MaxReps           = 1000            // repetitions
	MaxEchoRate       = 10_000          // echo requests per second
	MaxEchoFor        = time.Hour       // length of an echo replay
	MaxFibSize        = 50              // n of table5 and fig9
	MaxStallMiB       = 1024            // input of the stall experiment
	MaxSimWork        = 5 * time.Second // simulated work per worker
	maxShare          = 50              // interactive share of fig9, in percent
	maxPromptRequests = 1_000_000       // a prompt cell's requests
	maxWeight         = 1e6             // a criterion's share
)

// Experiments lists the experiment names in the order of the report.
var Experiments = []string{"table1", "table2", "table3", "table4", "table5", "fig8", "fig9", "stall"}

// OptionalExperiments run only when named: they are not part of the
// default suite ("all"), which must stay short. http: an endpoint beside a
// batch (http.go); sim: the scheduler simulated at P = 2 to 128 (sim.go);
// collector: table5's fine-grained setting with Spawn and with Fork2, and
// what the collector did meanwhile.
// prompt: the echo beside every load under every criterion, at least 2000
// requests a cell (prompt.go).
var OptionalExperiments = []string{"http", "sim", "collector", "prompt"}

// Criterion is a three-priority fairness criterion in percent: the shares
// of the high, medium and low priorities.
type Criterion [3]float64

// String writes the criterion as the paper does, e.g. "50-25-25".
func (c Criterion) String() string {
	return fmt.Sprintf("%s-%s-%s", num(c[0]), num(c[1]), num(c[2]))
}

// ExpectedStretch is the stretch of the low priority, total/low.
func (c Criterion) ExpectedStretch() float64 { return (c[0] + c[1] + c[2]) / c[2] }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// ParseCriterion reads "H-M-L" with non-negative numbers, not all zero. A
// zero L suits the prompt experiment (100-0-0) but not the experiments
// that measure the kernel's stretch, which Config.Validate refuses it.
func ParseCriterion(s string) (Criterion, error) {
	parts := strings.Split(s, "-")
	var c Criterion
	if len(parts) != 3 {
		return c, badConfig("criterion %q is not HIGH-MEDIUM-LOW, e.g. 50-25-25", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > maxWeight {
			return c, badConfig("criterion %q: %q is not a share in [0, %g]", s, p, float64(maxWeight))
		}
		c[i] = v
	}
	if c[0]+c[1]+c[2] == 0 {
		return c, badConfig("criterion %q gives no priority a share", s)
	}
	return c, nil
}

// Config is a benchmark suite.
type Config struct {
	// Kernels are the compute kernels to run.
	Kernels []kernels.Kernel
	// Sizes gives a kernel's size by name; a kernel without one runs at
	// its DefaultSize.
	Sizes map[string]int
	// Procs are the processor counts to measure at (fairly's workers, or
	// GOMAXPROCS for plain goroutines).
	Procs []int
	// Criteria are the criteria of table1, table4 and fig8.
	Criteria []Criterion
	// Shares are the interactive shares of fig9, in percent: the criterion
	// is share-(50-share)-50.
	Shares []float64
	// Reps is how many times each kernel measurement is repeated.
	Reps int
	// Experiments are the names (of Experiments) to run.
	Experiments []string
	// EchoRate is the driver's request rate, per second.
	EchoRate float64
	// SimRate is the rate of the simulated interactive arrivals of the sim
	// experiment, per virtual second (0: 2000, the stress its tables are
	// made with; fairbench's Table 1 echo runs at EchoRate, 50 by default).
	SimRate float64
	// SimSeed is the seed of the sim experiment (0: DefaultSimSeed): one
	// seed gives one schedule; medians over seeds show the spread of
	// the random primary priorities, wide at P = 2 (docs/simulation.md).
	SimSeed uint64
	// SimWork is the work per worker of the sim experiment's kernels, in
	// virtual time (0: 50 ms, tens of rounds at every P). Fairbench's
	// Table 1 kernels run about ten times longer; at P = 2 a run as long
	// as theirs samples the primary priority as often (docs/simulation.md).
	SimWork time.Duration
	// EchoFor is how long the driver runs in table5 and fig9, where the
	// kernel repeats until the driver is done.
	EchoFor time.Duration
	// FibSize is the n of table5 and fig9 (default: the size of "fib").
	FibSize int
	// StallMiB is the input size of the stall experiment's library calls,
	// in MiB (default 64: sha256 and flate over 64 MiB, a sort of 1M keys).
	StallMiB int
	// PromptLoads are the prompt experiment's loads beside Kernels (names
	// of PromptLoads).
	PromptLoads []string
	// PromptCriteria are the prompt experiment's criteria (nil:
	// PromptCriteria).
	PromptCriteria []Criterion
	// PromptSizes gives a kernel's size in the prompt experiment by name;
	// a kernel without one runs at its DefaultSize.
	PromptSizes map[string]int
	// PromptRate is the prompt experiment's echo rate per second (0:
	// DefaultPromptRate), PromptRequests the requests each of its cells
	// measures at least (0: DefaultPromptRequests).
	PromptRate     float64
	PromptRequests int
	// PromptNoControls leaves out the prompt experiment's plain-Go
	// controls, plain and floor at each load and processor count
	// (prompt_controls.go), which run by default.
	PromptNoControls bool
	// PromptTrace, if not empty, is the folder where the prompt
	// experiment keeps execution traces of its slow cells
	// (prompt_trace.go).
	PromptTrace string
	// HTTP sets the load of the http experiment.
	HTTP HTTPConfig
	// EchoGrace is how long a driver waits for the echoes of its last
	// requests before it counts them lost (0: the driver's default, 2 s).
	// Tests under the race detector on a loaded machine need more.
	EchoGrace time.Duration
	// DumpDir, if set, is where a replay that leaves requests unanswered
	// writes the stacks of the process's goroutines (unanswered-*.txt),
	// taken before the echo server closes.
	DumpDir string
	// Driver returns a command that runs the driver with the given
	// arguments (see driver.Main); it must not be started yet.
	Driver func(args ...string) *exec.Cmd
	// Progress, if set, is called before each step of the suite with the
	// steps done so far, their total and the name of the step starting, and
	// once at the end with an empty name.
	Progress func(done, total int, next string)
}

// simRate, simSeed and simWork are the sim experiment's settings, the
// defaults where they are zero.
func (c *Config) simRate() float64       { return cmp.Or(c.SimRate, defaultSimRate) }
func (c *Config) simSeed() uint64        { return cmp.Or(c.SimSeed, DefaultSimSeed) }
func (c *Config) simWork() time.Duration { return cmp.Or(c.SimWork, DefaultSimWork) }

// stallMiB is StallMiB or its default.
func (c *Config) stallMiB() int {
	if c.StallMiB <= 0 {
		return 64
	}
	return c.StallMiB
}

// Validate reports the first problem of c, matching ErrConfig. Its
// messages name the quantity and its bounds, e.g. "processor count 0 is
// not in 1..256".
func (c *Config) Validate() error {
	switch {
	case len(c.Experiments) == 0:
		return badConfig("no experiment chosen")
	case len(c.Procs) == 0:
		return badConfig("no processor count")
	case c.Reps < 1 || c.Reps > MaxReps:
		return badConfig("repetitions %d is not in 1..%d", c.Reps, MaxReps)
	case !(c.EchoRate > 0 && c.EchoRate <= MaxEchoRate):
		return badConfig("echo rate %v is not in (0, %d] requests per second", c.EchoRate, MaxEchoRate)
	case c.SimWork != 0 && (c.SimWork < time.Millisecond || c.SimWork > MaxSimWork):
		return badConfig("simulated work per worker %v is not in [1ms, %v] (0: the default, %v)", c.SimWork, MaxSimWork, DefaultSimWork)
	case !(c.SimRate >= 0 && c.SimRate <= MaxEchoRate):
		return badConfig("simulated arrival rate %v is not in [0, %d] per second (0: the default, %d)", c.SimRate, MaxEchoRate, defaultSimRate)
	case c.EchoFor <= 0 || c.EchoFor > MaxEchoFor:
		return badConfig("echo replay length %v is not in (0, %v]", c.EchoFor, MaxEchoFor)
	case c.FibSize < 0 || c.FibSize > MaxFibSize:
		return badConfig("fib size %d is not in 1..%d (0: the size of the fib kernel)", c.FibSize, MaxFibSize)
	case c.StallMiB < 0 || c.StallMiB > MaxStallMiB:
		return badConfig("stall input %d MiB is not in 1..%d (0: the default)", c.StallMiB, MaxStallMiB)
	case c.Driver == nil:
		return badConfig("no way to start the driver")
	}
	for _, e := range c.Experiments {
		if !slices.Contains(Experiments, e) && !slices.Contains(OptionalExperiments, e) {
			return badConfig("unknown experiment %q (known: %s)", e, strings.Join(slices.Concat(Experiments, OptionalExperiments), ", "))
		}
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	for _, p := range c.Procs {
		if p < 1 || p > MaxProcs {
			return badConfig("processor count %d is not in 1..%d", p, MaxProcs)
		}
	}
	if c.needs("table1", "table2", "table3", "table4", "fig8", "sim") && len(c.Kernels) == 0 {
		return badConfig("no kernel chosen")
	}
	if c.needs("prompt") && len(c.Kernels) == 0 && len(c.PromptLoads) == 0 {
		return badConfig("the prompt experiment has no kernel and no load")
	}
	for _, l := range c.PromptLoads {
		if !slices.Contains(PromptLoads, l) {
			return badConfig("unknown prompt load %q (known: %s)", l, strings.Join(PromptLoads, ", "))
		}
	}
	switch {
	case !(c.PromptRate >= 0 && c.PromptRate <= MaxEchoRate):
		return badConfig("prompt echo rate %v is not in [0, %d] per second (0: the default, %d)", c.PromptRate, MaxEchoRate, DefaultPromptRate)
	case c.PromptRequests < 0 || c.PromptRequests > maxPromptRequests:
		return badConfig("prompt requests per cell %d is not in [0, %d] (0: the default, %d)", c.PromptRequests, maxPromptRequests, DefaultPromptRequests)
	}
	if c.needs("table1", "table4", "fig8", "sim") && len(c.Criteria) == 0 {
		return badConfig("no criterion chosen")
	}
	for _, cr := range c.Criteria {
		if cr[2] == 0 && c.needs("table1", "table4", "fig8", "sim") {
			return badConfig("criterion %q gives the kernel no share, so its stretch is unbounded (the prompt experiment alone takes it)", cr)
		}
	}
	for _, s := range c.Shares {
		if !(s > 0 && s <= maxShare) {
			return badConfig("interactive share %v is not in (0, %d] percent", s, maxShare)
		}
	}
	if c.needs("fig9") && len(c.Shares) == 0 {
		return badConfig("fig9 needs interactive shares")
	}
	for name, size := range mergeSizes(c.Sizes, c.PromptSizes) {
		if size < 1 {
			return badConfig("size %d of %s is not positive", size, name)
		}
	}
	return nil
}

// mergeSizes gives the entries of a and b in one map, for checking.
func mergeSizes(a, b map[string]int) map[string]int {
	out := maps.Clone(a)
	if out == nil {
		out = make(map[string]int)
	}
	maps.Copy(out, b)
	return out
}

// needs reports whether any of the experiments is chosen.
func (c *Config) needs(any ...string) bool {
	for _, e := range any {
		if slices.Contains(c.Experiments, e) {
			return true
		}
	}
	return false
}

// size is the size a kernel runs at.
func (c *Config) size(k kernels.Kernel) int {
	if n, ok := c.Sizes[k.Name]; ok {
		return n
	}
	return k.DefaultSize
}

// fibSize is the n of table5 and fig9.
func (c *Config) fibSize() int {
	if c.FibSize > 0 {
		return c.FibSize
	}
	if n, ok := c.Sizes["fib"]; ok {
		return n
	}
	k, err := kernels.Lookup("fib")
	if err != nil {
		panic(err) // the kernels package always has fib
	}
	return k.DefaultSize
}
