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
//   - table5: Fibonacci at fine grain (a spawn at every call) and coarse
//     grain (sequential at n ≤ 12) with a network echo at high priority and
//     criterion 50-50, against plain goroutines, and an idle baseline.
//   - fig8: actual over expected stretch per kernel (the runs of table1).
//   - fig9: terminal echo response time against the interactive share.
//
// Response times are always measured by the driver (package driver) in a
// process of its own, over loopback TCP or its standard input and output.
// Config.Driver says how to start it.
package harness

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
)

// ErrConfig is wrapped by the errors of Config.Validate and of the parsers
// of this package.
var ErrConfig = errors.New("harness: bad configuration")

// Experiments lists the experiment names in the order of the report.
var Experiments = []string{"table1", "table2", "table3", "table4", "table5", "fig8", "fig9", "stall"}

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

// ParseCriterion reads "H-M-L" with non-negative numbers and L > 0.
func ParseCriterion(s string) (Criterion, error) {
	parts := strings.Split(s, "-")
	var c Criterion
	if len(parts) != 3 {
		return c, fmt.Errorf("%w: criterion %q: want HIGH-MEDIUM-LOW, e.g. 50-25-25", ErrConfig, s)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 1e6 {
			return c, fmt.Errorf("%w: criterion %q: %q is not a share", ErrConfig, s, p)
		}
		c[i] = v
	}
	if c[2] == 0 {
		return c, fmt.Errorf("%w: criterion %q gives the kernel no share, so its stretch is unbounded", ErrConfig, s)
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
	// EchoFor is how long the driver runs in table5 and fig9, where the
	// kernel repeats until the driver is done.
	EchoFor time.Duration
	// FibSize is the n of table5 and fig9 (default: the size of "fib").
	FibSize int
	// StallMiB is the input size of the stall experiment's library calls,
	// in MiB (default 64: sha256 and flate over 64 MiB, a sort of 1M keys).
	StallMiB int
	// Driver returns a command that runs the driver with the given
	// arguments (see driver.Main); it must not be started yet.
	Driver func(args ...string) *exec.Cmd
	// Progress, if set, is called before each step of the suite with the
	// steps done so far, their total and the name of the step starting, and
	// once at the end with an empty name.
	Progress func(done, total int, next string)
}

// stallMiB is StallMiB or its default.
func (c *Config) stallMiB() int {
	if c.StallMiB <= 0 {
		return 64
	}
	return c.StallMiB
}

// Validate reports the first problem of c, wrapping ErrConfig.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case len(c.Experiments) == 0:
		return bad("no experiment chosen")
	case len(c.Procs) == 0:
		return bad("no processor count")
	case c.Reps < 1:
		return bad("reps must be at least 1")
	case c.EchoRate <= 0 || c.EchoRate > 10000:
		return bad("echo rate %v is not in (0, 10000] per second", c.EchoRate)
	case c.EchoFor <= 0:
		return bad("echo duration must be positive")
	case c.Driver == nil:
		return bad("no way to start the driver")
	}
	for _, e := range c.Experiments {
		if !slices.Contains(Experiments, e) {
			return bad("unknown experiment %q (known: %s)", e, strings.Join(Experiments, ", "))
		}
	}
	for _, p := range c.Procs {
		if p < 1 || p > 1024 {
			return bad("processor count %d", p)
		}
	}
	if c.needs("table1", "table2", "table3", "table4", "fig8") && len(c.Kernels) == 0 {
		return bad("no kernel chosen")
	}
	if c.needs("table1", "table4", "fig8") && len(c.Criteria) == 0 {
		return bad("no criterion chosen")
	}
	for _, s := range c.Shares {
		if s <= 0 || s > 50 {
			return bad("interactive share %v is not in (0, 50]", s)
		}
	}
	if c.needs("fig9") && len(c.Shares) == 0 {
		return bad("fig9 needs interactive shares")
	}
	for name, size := range c.Sizes {
		if size < 1 {
			return bad("size %d of %s", size, name)
		}
	}
	return nil
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
