package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gonum.org/v1/plot"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// TestMain lets the test binary double as the driver process.
func TestMain(m *testing.M) {
	if os.Getenv("FAIRBENCH_TEST_DRIVER") == "1" {
		os.Exit(driver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func testDriver(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), "FAIRBENCH_TEST_DRIVER=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

func lookup(t *testing.T, names ...string) []kernels.Kernel {
	t.Helper()
	var ks []kernels.Kernel
	for _, n := range names {
		k, err := kernels.Lookup(n)
		require.NoError(t, err)
		ks = append(ks, k)
	}
	return ks
}

// tinyConfig is the whole suite at sizes that take milliseconds.
func tinyConfig(t *testing.T) Config {
	return Config{
		Kernels:     lookup(t, "fib", "uts"),
		Sizes:       map[string]int{"fib": 12, "uts": 3},
		Procs:       []int{1, 2},
		Criteria:    []Criterion{{50, 0, 50}, {50, 25, 25}},
		Shares:      []float64{50, 5},
		Reps:        2,
		Experiments: Experiments,
		EchoRate:    100,
		EchoFor:     150 * time.Millisecond,
		FibSize:     14,
		StallMiB:    1,
		EchoGrace:   30 * time.Second, // slow under -race beside other packages' tests
		Driver:      testDriver,
	}
}

// tables splits the markdown tables of a report into rows of cells.
func tables(md string) [][][]string {
	var out [][][]string
	var cur [][]string
	cell := regexp.MustCompile(`(?:\\\||[^|])+`)
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cells := cell.FindAllString(strings.Trim(line, "|"), -1)
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		cur = append(cur, cells)
	}
	return out
}

func TestSuite(t *testing.T) {
	cfg := tinyConfig(t)
	var steps []string
	cfg.Progress = func(done, total int, next string) {
		assert.LessOrEqual(t, done, total)
		steps = append(steps, next)
	}
	res, err := Run(cfg)
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	assert.Empty(t, steps[len(steps)-1], "the last call announces the end")

	// Every response-time record saw its echoes answered; loaded runs say
	// how the processor time was shared.
	for _, rec := range res.Records {
		if rec.Kind == kindLoaded || rec.Kind == kindWTA {
			require.NotNil(t, rec.CPUShares, "%s %s P=%d %s", rec.Kind, rec.Kernel, rec.Procs, rec.Criterion)
			sh := rec.CPUShares
			assert.InDelta(t, 1, sh.High+sh.Medium+sh.Low, 1e-9, "%s %s P=%d %s", rec.Kind, rec.Kernel, rec.Procs, rec.Criterion)
			assert.Positive(t, sh.Low, "the kernel ran: %s %s P=%d %s", rec.Kind, rec.Kernel, rec.Procs, rec.Criterion)
		}
		if rec.Kind == kindLoaded || rec.Kind == kindWTA {
			// Each run is a measured span; every request is counted in a phase.
			assert.Len(t, rec.Measured, cfg.Reps, "%s %s P=%d %s", rec.Kind, rec.Kernel, rec.Procs, rec.Criterion)
			n := 0
			for _, k := range rec.PhaseRequests {
				n += k
			}
			assert.Equal(t, rec.Echo.Sent, n, "%s %s P=%d %s", rec.Kind, rec.Kernel, rec.Procs, rec.Criterion)
		}
		if rec.Echo != nil {
			assert.Positive(t, rec.Echo.Sent, "%s %s", rec.Kind, rec.Grain)
			assert.Equal(t, rec.Echo.Sent, rec.Echo.Received, "%s %s %s %s P=%d: %s", rec.Kind, rec.Kernel, rec.Grain, rec.System, rec.Procs, rec.Echo.Stopped)
		}
	}

	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, "# test\n\n", res))
	for _, f := range []string{"report.md", "results.json", "fig8.png", "fig9.png", "stall.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	tbs := tables(string(md))
	require.Len(t, tbs, len(Experiments), "one table per experiment")
	stallRows := 10 // per P: four fairly rows, the goroutines' sort
	if canIdleThreads {
		stallRows += 6 // and the tuned goroutines' three loads
	}
	rows := map[int]int{0: 4, 1: 8, 2: 4, 3: 4, 4: 12, 5: 2, 6: 4, 7: stallRows} // data rows of each table (table2: cutoff and fine)
	for i, tb := range tbs {
		require.GreaterOrEqual(t, len(tb), 2, "table %d", i)
		for _, r := range tb {
			assert.Len(t, r, len(tb[0]), "table %d row %q", i, r)
		}
		assert.Len(t, tb[2:], rows[i], "table %d", i)
		if i == 4 || i == 7 {
			continue // table5 and stall have no compute time at idle, and table5 no ratio on fairly's rows
		}
		for _, r := range tb[2:] {
			for j, c := range r {
				// The tiny kernels run for microseconds, so hardly a request
				// is sent while one runs, and only those count (phases.go):
				// the response times of tables 3 and 4 may be missing.
				if (i == 2 || i == 3) && echoColumn(tb[0][j]) {
					continue
				}
				assert.NotEqual(t, "—", c, "table %d row %q has a missing measurement", i, r)
			}
		}
	}
	assert.Contains(t, string(md), "![Figure 8")

	var back Results
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Len(t, back.Records, len(res.Records))

	assert.Equal(t, strings.Count(Markdown(res), "\n## "), len(Experiments)-1)
}

// echoColumn reports whether a table's column holds response times.
func echoColumn(head string) bool {
	return strings.HasPrefix(head, "echo") || head == "p99 (ms)" || head == "max (ms)" || slices.Contains(partsHead, head)
}

// TestTable2Fine runs table2 alone and checks its fine-grained rows: a
// time and ratios for every kernel at every P, the records behind them
// marked with the fine grain, and the figures of the other tables
// unchanged by them.
func TestTable2Fine(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Kernels = lookup(t, "fib", "fib-cutoff", "uts", "strassen", "bfs", "sort")
	cfg.Sizes = map[string]int{"fib": 12, "fib-cutoff": 14, "uts": 3, "strassen": 130, "bfs": 5000, "sort": 20_000}
	cfg.Experiments = []string{"table2"}
	res, err := Run(cfg)
	require.NoError(t, err)

	fine := map[string]*Record{}
	for _, rec := range res.Records {
		if rec.Grain == grainFine {
			fine[fmt.Sprintf("%s %s P=%d", rec.Kind, rec.Kernel, rec.Procs)] = rec
		}
	}
	for _, p := range cfg.Procs {
		for _, k := range []string{"fib", "uts", "strassen", "bfs", "sort"} {
			rec := fine[fmt.Sprintf("%s %s P=%d", kindAlone, k, p)]
			require.NotNil(t, rec, "%s fine P=%d", k, p)
			assert.Len(t, rec.Times, cfg.Reps, "%s fine P=%d", k, p)
			assert.Len(t, rec.SeqTimes, cfg.Reps, "%s fine P=%d: a sequential run before each", k, p)
			assert.Len(t, rec.SeqRatios, cfg.Reps, "%s fine P=%d", k, p)
			assert.Positive(t, rec.SeqRatio, "%s fine P=%d", k, p)
		}
		rec := fine[fmt.Sprintf("%s strassen P=%d", kindGoroutines, p)]
		require.NotNil(t, rec, "strassen fine goroutines P=%d", p)
		assert.Len(t, rec.Times, cfg.Reps)
		for _, k := range []string{"bfs", "sort"} { // a goroutine per element: skipped
			rec := fine[fmt.Sprintf("%s %s P=%d", kindGoroutines, k, p)]
			require.NotNil(t, rec, "%s fine goroutines P=%d", k, p)
			assert.NotEmpty(t, rec.Skipped)
			assert.Empty(t, rec.Times)
		}
		assert.Nil(t, fine[fmt.Sprintf("%s fib-cutoff P=%d", kindAlone, p)], "fib-cutoff's fine version is fib's")
	}
	assert.Len(t, fine, 5*len(cfg.Procs)+3*len(cfg.Procs)) // fairly: all but fib-cutoff; goroutines: strassen, bfs, sort

	tbs := tables(Markdown(res))
	require.Len(t, tbs, 1)
	tb := tbs[0]
	assert.Equal(t, []string{"kernel", "P", "sequential (ms)", "goroutines (ms)", "fairly (ms)", "T_seq/T_fairly", "T_goroutines/T_fairly", "T1/T_seq"}, tb[0])
	got := map[string][]string{}
	for _, r := range tb[2:] {
		require.Len(t, r, len(tb[0]), "row %q", r)
		got[r[0]+" P="+r[1]] = r
	}
	require.Len(t, got, 2*len(cfg.Kernels)*len(cfg.Procs))
	for _, p := range cfg.Procs {
		for _, k := range []string{"fib", "uts", "strassen", "bfs", "sort"} {
			r := got[fmt.Sprintf("%s fine P=%d", k, p)]
			require.NotNil(t, r, "%s fine P=%d", k, p)
			for _, i := range []int{2, 4, 5, 7} { // sequential, fairly, speedup, T1/T_seq
				assert.NotEqual(t, "—", r[i], "%s fine P=%d column %q", k, p, tb[0][i])
			}
			switch k {
			case "fib", "uts":
				assert.Equal(t, got[fmt.Sprintf("%s P=%d", k, p)][3], r[3], "%s: its goroutine version forks at every call", k)
			case "strassen":
				assert.NotContains(t, r[3], "skipped")
				assert.NotEqual(t, "—", r[6])
			default:
				assert.True(t, strings.HasPrefix(r[3], "skipped: a goroutine per"), "%s fine goroutines: %q", k, r[3])
			}
		}
		assert.Equal(t, "= fib fine", got[fmt.Sprintf("fib-cutoff fine P=%d", p)][4])
		// The cutoff rows are the fairly runs without a grain.
		fair := res.find(Record{Kind: kindAlone, Kernel: "strassen", Procs: p})
		require.NotNil(t, fair)
		assert.Empty(t, fair.Grain)
		assert.Equal(t, millis(fair), got[fmt.Sprintf("strassen P=%d", p)][4])
	}
}

// TestTable2Paired: each fairly step of table2 runs the sequential version
// right before every repetition, on the same instance, and the ratios are
// those of the adjacent pairs.
func TestTable2Paired(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments, cfg.Reps = []string{"table2"}, 3
	s := &suite{cfg: &cfg}
	var calls []string
	inst := &loggedInstance{log: &calls}
	// Each fairly run has its own time, so that a ratio taken against the
	// wrong sequential run, or a median, would show.
	fine := []time.Duration{2 * time.Millisecond, 6 * time.Millisecond, 2 * time.Millisecond}
	n := 0
	rec, err := s.aloneRun(&Record{Kind: kindAlone, Procs: 1, Grain: grainFine}, inst, func(*runtime.Runtime, fairness.Priority) (time.Duration, error) {
		calls = append(calls, "fine")
		n++
		return fine[n-1], nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"seq", "check", "fine", "seq", "check", "fine", "seq", "check", "fine"}, calls)
	assert.Equal(t, fine, rec.Times)
	require.Len(t, rec.SeqTimes, 3)
	require.Len(t, rec.SeqRatios, 3)
	for i := range 3 {
		assert.InDelta(t, float64(rec.Times[i])/float64(rec.SeqTimes[i]), rec.SeqRatios[i], 1e-12, "pair %d", i)
	}
	assert.Equal(t, spreadOf(rec.SeqRatios).Median, rec.SeqRatio)

	// Without table2 the runs are not paired.
	cfg.Experiments = []string{"table1"}
	calls = nil
	rec, err = s.aloneRun(&Record{Kind: kindAlone, Procs: 1}, inst, func(*runtime.Runtime, fairness.Priority) (time.Duration, error) {
		calls = append(calls, "fine")
		return time.Millisecond, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"fine", "fine", "fine"}, calls)
	assert.Empty(t, rec.SeqTimes)
	assert.Empty(t, rec.SeqRatios)
}

// loggedInstance is a kernel instance that only logs its calls; its
// sequential run sleeps, so that it takes a time on any clock.
type loggedInstance struct{ log *[]string }

func (l *loggedInstance) Seq() {
	*l.log = append(*l.log, "seq")
	time.Sleep(50 * time.Microsecond)
}
func (l *loggedInstance) Goroutines()        { *l.log = append(*l.log, "goroutines") }
func (l *loggedInstance) Fairly(*thread.Ctx) { *l.log = append(*l.log, "fairly") }
func (l *loggedInstance) Check() error       { *l.log = append(*l.log, "check"); return nil }

// TestTable2PairedRatios: Table 2 divides each fairly run by the
// sequential run paired with it, not by the sequential step's median, and
// falls back on that median for results without pairs.
func TestTable2PairedRatios(t *testing.T) {
	ms := func(xs ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x*float64(time.Millisecond)))
		}
		return out
	}
	paired := func(p int, times, seq []time.Duration) *Record {
		r := &Record{Kind: kindAlone, Kernel: "fib", Procs: p, Grain: grainFine, Times: times, SeqTimes: seq}
		r.pairRatios()
		return r
	}
	seq := &Record{Kind: kindSeq, Kernel: "fib", Times: ms(1, 1, 1)}
	// Every pair at P = 1 has ratio 2, in and out of a slow stretch that
	// doubles the second and third pairs; the sequential step missed it.
	one := paired(1, ms(2, 4, 4), ms(1, 2, 2))
	two := paired(2, ms(0.5, 1, 1.5), ms(1, 1, 1))
	res := &Results{Kernels: []string{"fib"}, Procs: []int{1, 2}, Experiments: []string{"table2"},
		Records: []*Record{seq, one, two, {Kind: kindAlone, Kernel: "fib", Procs: 1, Times: ms(1, 1, 1)}, {Kind: kindAlone, Kernel: "fib", Procs: 2, Times: ms(0.5, 0.5, 0.5)}}}
	assert.Equal(t, []float64{2, 2, 2}, one.SeqRatios)
	assert.InDelta(t, 1.0, two.SeqRatio, 1e-12)
	got := map[string][]string{}
	for _, r := range tables(table2(res).Table)[0][2:] {
		got[r[0]+" P="+r[1]] = r
	}
	assert.Equal(t, "2.00×", got["fib fine P=1"][7], "T1/T_seq from the pairs")
	assert.Equal(t, "2.00×", got["fib fine P=2"][7])
	assert.Equal(t, "0.50×", got["fib fine P=1"][5], "T_seq/T_fairly from the pairs")
	assert.Equal(t, "1.00× (0.67–2.00)", got["fib fine P=2"][5])
	// The cutoff rows have no pairs: their ratios are to the sequential median.
	assert.Equal(t, "1.00×", got["fib P=1"][7])
	assert.Equal(t, "2.00×", got["fib P=2"][5])
	// The pairs of fine P=1 ran at their median twice the fastest
	// sequential run: a slow stretch, which the text names.
	text := table2(res).Text
	assert.Contains(t, text, "fib fine P=1 (2.00×)")
	assert.NotContains(t, text, "fib fine P=2")
	one.SeqTimes = ms(1, 1.2, 1.2)
	assert.Contains(t, table2(res).Text, "so their ratios may be off: none.")
}

// TestTable2FineOfMissing: fib-cutoff's fine rows point to fib's, and say
// so when fib did not run.
func TestTable2FineOfMissing(t *testing.T) {
	res := &Results{Kernels: []string{"fib-cutoff"}, Procs: []int{1}, Experiments: []string{"table2"},
		Records: []*Record{{Kind: kindSeq, Kernel: "fib-cutoff", Times: []time.Duration{time.Millisecond}}}}
	tb := tables(table2(res).Table)[0]
	require.Len(t, tb, 4)
	assert.Equal(t, "fib-cutoff fine", tb[3][0])
	assert.Equal(t, "= fib fine (fib not run)", tb[3][4])
}

func TestSuiteWrongDriver(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"table3"}
	cfg.Kernels = cfg.Kernels[:1]
	cfg.Procs = []int{1}
	cfg.Driver = func(args ...string) *exec.Cmd { return exec.Command(filepath.Join(t.TempDir(), "missing")) }
	_, err := Run(cfg)
	assert.ErrorContains(t, err, "fib winner-take-all P=1")
}

func TestValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no experiment": func(c *Config) { c.Experiments = nil },
		"unknown":       func(c *Config) { c.Experiments = []string{"table9"} },
		"no procs":      func(c *Config) { c.Procs = nil },
		"zero procs":    func(c *Config) { c.Procs = []int{0} },
		"reps":          func(c *Config) { c.Reps = 0 },
		"rate":          func(c *Config) { c.EchoRate = 0 },
		"echo duration": func(c *Config) { c.EchoFor = 0 },
		"driver":        func(c *Config) { c.Driver = nil },
		"kernels":       func(c *Config) { c.Kernels = nil },
		"criteria":      func(c *Config) { c.Criteria = nil },
		"share":         func(c *Config) { c.Shares = []float64{80} },
		"no shares":     func(c *Config) { c.Shares = nil },
		"negative size": func(c *Config) { c.Sizes = map[string]int{"fib": -1} },
		"many procs":    func(c *Config) { c.Procs = []int{1, MaxProcs + 1} },
		"many reps":     func(c *Config) { c.Reps = MaxReps + 1 },
		"fast rate":     func(c *Config) { c.EchoRate = MaxEchoRate + 1 },
		"NaN rate":      func(c *Config) { c.EchoRate = math.NaN() },
		"long echo":     func(c *Config) { c.EchoFor = MaxEchoFor + time.Second },
		"negative fib":  func(c *Config) { c.FibSize = -2 },
		"large fib":     func(c *Config) { c.FibSize = MaxFibSize + 1 },
		"stall input":   func(c *Config) { c.StallMiB = -1 },
		"sim rate":      func(c *Config) { c.SimRate = -1 },
		"sim work":      func(c *Config) { c.SimWork = time.Microsecond },
		"huge sim work": func(c *Config) { c.SimWork = time.Hour },
		"NaN sim rate":  func(c *Config) { c.SimRate = math.NaN() },
	} {
		cfg := tinyConfig(t)
		mutate(&cfg)
		err := cfg.Validate()
		assert.ErrorIs(t, err, ErrConfig, name)
		assert.NotContains(t, err.Error(), ErrConfig.Error(), "%s: the message says only what is wrong", name)
	}
	cfg := tinyConfig(t)
	require.NoError(t, cfg.Validate())
	cfg.Experiments, cfg.Kernels = []string{"table5"}, nil
	assert.NoError(t, cfg.Validate(), "table5 needs no kernel list")
}

func TestParseCriterion(t *testing.T) {
	c, err := ParseCriterion("50-25-25")
	require.NoError(t, err)
	assert.Equal(t, Criterion{50, 25, 25}, c)
	assert.Equal(t, "50-25-25", c.String())
	assert.InDelta(t, 4.0, c.ExpectedStretch(), 1e-12)
	c, err = ParseCriterion("2.5-0-97.5")
	require.NoError(t, err)
	assert.Equal(t, "2.5-0-97.5", c.String())
	c, err = ParseCriterion("100-0-0")
	require.NoError(t, err, "the prompt experiment's criterion parses; Validate keeps it from the stretch experiments")
	assert.Equal(t, "100-0-0", c.String())
	for _, bad := range []string{"", "50-50", "a-b-c", "0-0-0", "-1-0-5", "1-2-3-4"} {
		_, err := ParseCriterion(bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
}

func TestStats(t *testing.T) {
	s := spreadOf([]float64{3, 1, 2, 10})
	assert.Equal(t, Spread{Median: 2.5, Min: 1, Max: 10, N: 4}, s)
	assert.Equal(t, "2.50 (1.00–10.00)", s.format(2, ""))
	assert.Equal(t, "—", spreadOf(nil).format(2, ""))
	assert.Equal(t, "7×", spreadOf([]float64{7}).format(0, "×"))
	assert.Equal(t, []float64{2, 1}, ratios(4, []float64{2, 4, 0}, false))
	assert.Equal(t, []float64{0.5, 1}, ratios(4, []float64{2, 4}, true))

	var rtt []time.Duration
	for i := 1; i <= 200; i++ {
		rtt = append(rtt, time.Duration(i)*time.Millisecond)
	}
	l := latency.Of(rtt, 3)
	assert.Equal(t, time.Millisecond*198, l.P99)
	assert.Equal(t, Latency{Lost: 2}, latency.Of(nil, 2))
	assert.Equal(t, "0.25", ms(250*time.Microsecond))
	assert.Equal(t, "12.5", ms(12500*time.Microsecond))
	assert.Equal(t, "250", ms(250*time.Millisecond))
}

func TestFactor(t *testing.T) {
	assert.Equal(t, "45×", factor(45.1))
	assert.Equal(t, "8.8×", factor(8.81))
	assert.Equal(t, "0.05×", factor(0.047))
}

func TestTableEscapes(t *testing.T) {
	tb := table{head: []string{"a", "b"}}
	tb.add("x|y", "z")
	assert.Equal(t, "| a | b |\n| --- | --- |\n| x\\|y | z |\n", tb.String())
	assert.Len(t, tables(tb.String())[0][2], 2)
}

func TestChartAxes(t *testing.T) {
	p := plot.New()
	decades(p, []float64{0.15, 11, 1})
	assert.Equal(t, -1.0, p.Y.Min)
	assert.Equal(t, 2.0, p.Y.Max)
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"0.1", "1", "10", "100"}, labels)
	assert.InDelta(t, 0, lg(1), 1e-12)
	assert.InDelta(t, math.Log10(minMillis), lg(0), 1e-12, "a time of zero is drawn at the floor")

	var at []string
	for _, tk := range linearTicks(0.5)(0, 1.7) {
		at = append(at, tk.Label)
	}
	assert.Equal(t, []string{"0", "0.5", "1", "1.5"}, at)
}

// TestDumpGoroutines: a replay with unanswered requests leaves the stacks
// of the process's goroutines in the report folder.
func TestDumpGoroutines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	dumpGoroutines(dir, &driver.Result{Sent: 3, Received: 1, Stopped: "2 requests unanswered after a grace of 2s"})
	files, err := filepath.Glob(filepath.Join(dir, "unanswered-*.txt"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(data), "2 of 3 requests unanswered: 2 requests unanswered after a grace of 2s")
	assert.Contains(t, string(data), "TestDumpGoroutines", "the stacks of the goroutines")
}

// TestCollector runs the optional collector experiment: fine-grained fib
// beside the echo with Spawn and with Fork2 at every P, each with what the
// collector did, in a table of its own.
func TestCollector(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"collector"}
	res, err := Run(cfg)
	require.NoError(t, err)
	for _, p := range cfg.Procs {
		for _, g := range []string{grainSpawn, grainFork2} {
			rec := res.find(Record{Kind: kindCollector, Grain: g, Procs: p, System: sysFairly})
			require.NotNil(t, rec, "%s P=%d", g, p)
			assert.NotEmpty(t, rec.Times, "%s P=%d", g, p)
			require.NotNil(t, rec.Collector, "%s P=%d", g, p)
			assert.GreaterOrEqual(t, rec.Collector.PerSecond, 0.0)
			require.NotNil(t, rec.Echo)
			assert.Equal(t, rec.Echo.Sent, rec.Echo.Received, "%s P=%d", g, p)
		}
	}
	tbs := tables(Markdown(res))
	require.Len(t, tbs, 1)
	assert.Equal(t, "collections/s", tbs[0][0][8])
	assert.Len(t, tbs[0][2:], 2*len(cfg.Procs))
	for _, r := range tbs[0][2:] {
		assert.NotEqual(t, "—", r[8], "row %q", r)
	}
}
