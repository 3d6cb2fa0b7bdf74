// Command fairbench runs fairly's benchmark suite: the experiments of the
// paper "Fairness in Responsive Parallelism" (§6), on fairly and against
// plain goroutines. It prints the tables as markdown and writes a report
// folder with the same tables, PNG charts and the raw measurements.
//
//	go run ./bench/cmd/fairbench                  # the quick suite, a minute or two
//	go run ./bench/cmd/fairbench -full -out full  # default sizes, more repetitions
//	go run ./bench/cmd/fairbench -experiments table5 -procs 2 -echo-for 20s
//	go run ./bench/cmd/fairbench -experiments http -procs 2  # optional: net/http beside a batch
//
// Run with -h for every flag. "fairbench driver ..." runs the interaction
// driver (package driver), which the suite starts as a process of its own
// so that response times are measured outside the process being measured.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/harness"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/internal/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "driver" {
		os.Exit(driver.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// quickSizes make every kernel's sequential run last about a tenth of a
// second on the 2-core machines the suite was tuned on.
var quickSizes = map[string]int{
	"fib": 27, "fib-cutoff": 37, "uts": 8, "strassen": 512, "bfs": 400_000, "sort": 1_000_000,
}

// selfDriver gives the command that runs this executable's driver
// subcommand, under nice at the given niceness unless it is 0. The driver
// shares the machine's cores with the servers it measures; a better OS
// priority keeps its own scheduling delays out of the response times it
// records (for fairly and plain goroutines alike). Without the privilege to
// raise priority, nice warns and runs the driver as it is.
func selfDriver(niceness int) func(args ...string) *exec.Cmd {
	return func(args ...string) *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0] // if that cannot run either, starting the driver reports it
		}
		args = append([]string{exe, "driver"}, args...)
		if niceness != 0 {
			if nice, err := exec.LookPath("nice"); err == nil {
				return exec.Command(nice, append([]string{"-n", strconv.Itoa(niceness)}, args...)...)
			}
		}
		return exec.Command(args[0], args[1:]...)
	}
}

// run is the command without the process around it; it returns the exit
// code (see cli.Main).
func run(args []string, stdout, stderr io.Writer) int {
	var (
		cfg      *harness.Config
		out      string
		progress bool
	)
	parse := func() (err error) {
		cfg, out, progress, err = parseFlags(args, stderr)
		return err
	}
	return cli.Main("fairbench", stderr, parse, func() error { return suite(args, cfg, out, progress, stdout, stderr) })
}

// suite runs the suite of cfg, prints its tables on stdout and writes the
// report folder out.
func suite(args []string, cfg *harness.Config, out string, progress bool, stdout, stderr io.Writer) error {
	if progress && !isTerminal(stderr) {
		cfg.Progress = stepLines(stderr)
	} else if progress {
		var bar *progressbar.ProgressBar
		cfg.Progress = func(done, total int, next string) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr), progressbar.OptionShowCount(),
					progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth(),
					progressbar.OptionShowElapsedTimeOnFinish())
			}
			bar.Describe(next)
			_ = bar.Set(done)
			if next == "" {
				_ = bar.Finish()
				fmt.Fprintln(stderr)
			}
		}
	}
	loadBefore := loadAverage()
	res, err := harness.Run(*cfg)
	if err != nil {
		if progress && isTerminal(stderr) {
			fmt.Fprintln(stderr) // end the progress bar's line
		}
		return err
	}
	fmt.Fprint(stdout, harness.Markdown(res))
	if err := harness.WriteReport(out, header(args, cfg, loadBefore, loadAverage()), res); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	fmt.Fprintf(stderr, "fairbench: report written to %s/report.md\n", out)
	return nil
}

// isTerminal reports whether w is a terminal: the progress bar redraws
// its line with carriage returns, which only a terminal shows as one line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stepLines is the progress report for a file or a pipe: one line as each
// step starts, and one at the end.
func stepLines(w io.Writer) func(done, total int, next string) {
	start := time.Now()
	return func(done, total int, next string) {
		if next == "" {
			fmt.Fprintf(w, "fairbench: %d steps done in %v\n", total, time.Since(start).Round(time.Second))
			return
		}
		fmt.Fprintf(w, "fairbench: [%d/%d] %s\n", done+1, total, next)
	}
}

// maxNice is the largest niceness Unix knows; -maxNice-1 the smallest.
const maxNice = 19

// parseFlags reads the command line into a suite, the report folder and
// whether to show progress. With -h it prints the usage on stderr and
// returns flag.ErrHelp; its other errors are mistakes on the command line,
// worded for the command's name to precede them.
func parseFlags(args []string, stderr io.Writer) (*harness.Config, string, bool, error) {
	fs := flag.NewFlagSet("fairbench", flag.ContinueOnError)
	names := make([]string, 0)
	for _, k := range kernels.All() {
		names = append(names, k.Name)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fairbench [flags]\n\nRuns fairly's benchmark suite and writes a report.\n"+
			"Kernels: %s. Experiments: %s (all); optional: %s.\n"+
			"The prompt experiment (-experiments prompt) runs the echo beside every kernel of -kernels at its default size and the loads %s\n"+
			"(also named in -kernels; all: every kernel and load), under the criteria 100-0-0, 50-0-50, 50-25-25, 5-45-50 (or -criteria when given),\n"+
			"and each load and P once on plain Go and once on plain Go tuned by hand (-prompt-controls=false leaves them out).\n\n",
			strings.Join(names, ", "), strings.Join(harness.Experiments, ", "),
			strings.Join(harness.OptionalExperiments, ", "), strings.Join(harness.PromptLoads, ", "))
		fs.PrintDefaults()
	}
	quick := fs.Bool("quick", true, "quick suite: small sizes, 3 repetitions, 2s echo replays")
	full := fs.Bool("full", false, "full suite: the kernels' default sizes (about 1s sequential), 5 repetitions, 10s echo replays")
	kernelList := fs.String("kernels", "all", "comma-separated kernels (and for the prompt experiment loads), or all")
	procList := fs.String("procs", "1,2", fmt.Sprintf("comma-separated processor counts, each 1 to %d", harness.MaxProcs))
	critList := fs.String("criteria", "50-0-50,50-25-25", "comma-separated criteria HIGH-MEDIUM-LOW (percent) for table1, table4 and fig8; when given, also the prompt experiment's")
	shareList := fs.String("shares", "50,25,5", "comma-separated interactive shares (percent) for fig9")
	sizeList := fs.String("size", "", "kernel sizes: name=N,... and/or one of the presets quick, default, paper")
	reps := fs.Int("reps", 0, fmt.Sprintf("repetitions of each kernel measurement, 1 to %d (default 3 quick, 5 full)", harness.MaxReps))
	expList := fs.String("experiments", "all", "comma-separated experiments, or all")
	rate := fs.Float64("rate", 50, fmt.Sprintf("echo requests per second, above 0 and at most %d", harness.MaxEchoRate))
	simRate := fs.Float64("sim-rate", 2000, fmt.Sprintf("interactive arrivals per virtual second of the sim experiment, above 0 and at most %d", harness.MaxEchoRate))
	simSeed := fs.Uint64("sim-seed", harness.DefaultSimSeed, "seed of the sim experiment: one seed gives one schedule (the default makes docs/simulation.md's tables)")
	simWork := fs.Duration("sim-work", harness.DefaultSimWork, fmt.Sprintf("work per worker of the sim experiment's kernels, in virtual time, 1ms to %v", harness.MaxSimWork))
	echoFor := fs.Duration("echo-for", 0, "length of the echo replays of table5 and fig9 (default 2s quick, 10s full)")
	fibSize := fs.Int("fib", 0, fmt.Sprintf("n of fib in table5 and fig9, 1 to %d (default: the size of fib)", harness.MaxFibSize))
	out := fs.String("out", "fairbench-report", "report folder")
	progress := fs.Bool("progress", true, "show a progress bar on standard error")
	driverNice := fs.Int("driver-nice", -10, "niceness of the echo driver process, -20 to 19 (0: unchanged); see bench/README.md")
	stallMiB := fs.Int("stall-mib", 64, fmt.Sprintf("input size of the stall experiment's library calls, in MiB, 1 to %d", harness.MaxStallMiB))
	promptRate := fs.Float64("prompt-rate", harness.DefaultPromptRate, fmt.Sprintf("echo requests per second of the prompt experiment, above 0 and at most %d", harness.MaxEchoRate))
	promptControls := fs.Bool("prompt-controls", true, "run the prompt experiment's plain-Go controls (plain, and floor: tuned by hand; beside a kernel also floor-alloc, allocating as fast as fairly's cells) at each load and P")
	promptTrace := fs.String("prompt-trace", "", "folder for Go execution traces of the prompt experiment's slow cells (p99 above 1 ms or a request of 5 ms), each with its slow requests; read them with bench/cmd/stalltrace")
	promptRequests := fs.Int("prompt-requests", harness.DefaultPromptRequests, "requests each cell of the prompt experiment measures at least, 1 to 1000000")
	httpRate := fs.Float64("http-rate", 200, fmt.Sprintf("requests per second of the http experiment, above 0 and at most %d", harness.MaxEchoRate))
	httpFor := fs.Duration("http-for", 5*time.Second, "length of each run of the http experiment")
	httpKiB := fs.Int("http-kib", 256, fmt.Sprintf("KiB each request of the http experiment hashes, 1 to %d", harness.MaxHTTPKiB))
	if err := cli.Parse(fs, args, stderr); err != nil {
		return nil, "", false, err
	}
	if err := cli.Between("driver-nice", *driverNice, -maxNice-1, maxNice); err != nil {
		return nil, "", false, err
	}
	if err := cli.First(cli.Between("http-rate", *httpRate, 1e-3, harness.MaxEchoRate), cli.Between("sim-rate", *simRate, 1e-3, harness.MaxEchoRate),
		cli.Between("sim-work", *simWork, time.Millisecond, harness.MaxSimWork),
		cli.Between("http-for", *httpFor, time.Millisecond, harness.MaxEchoFor), cli.Between("http-kib", *httpKiB, 1, harness.MaxHTTPKiB),
		cli.Between("prompt-rate", *promptRate, 1e-3, harness.MaxEchoRate), cli.Between("prompt-requests", *promptRequests, 1, 1_000_000)); err != nil {
		return nil, "", false, err
	}
	if *out == "" {
		return nil, "", false, errors.New("-out is empty")
	}
	if *simSeed == 0 {
		return nil, "", false, errors.New("-sim-seed is 0; give a positive seed")
	}
	if *full {
		*quick = false
	}
	cfg := &harness.Config{EchoRate: *rate, SimRate: *simRate, SimSeed: *simSeed, SimWork: *simWork, EchoFor: *echoFor, Reps: *reps, FibSize: *fibSize, StallMiB: *stallMiB,
		HTTP:       harness.HTTPConfig{Rate: *httpRate, For: *httpFor, KiB: *httpKiB},
		PromptRate: *promptRate, PromptRequests: *promptRequests, PromptNoControls: !*promptControls, PromptTrace: *promptTrace}
	defaultReps, defaultFor, preset := 3, 2*time.Second, "quick"
	if !*quick {
		defaultReps, defaultFor, preset = 5, 10*time.Second, "default"
	}
	if cfg.Reps == 0 {
		cfg.Reps = defaultReps
	}
	if cfg.EchoFor == 0 {
		cfg.EchoFor = defaultFor
	}
	var err error
	if cfg.Kernels, cfg.PromptLoads, err = parseKernels(*kernelList); err != nil {
		return nil, "", false, err
	}
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if cfg.Procs, err = parseList("procs", *procList, parseInt); err != nil {
		return nil, "", false, err
	}
	if cfg.Criteria, err = parseList("criteria", *critList, harness.ParseCriterion); err != nil {
		return nil, "", false, err
	}
	if cfg.Shares, err = parseList("shares", *shareList, parseFloat); err != nil {
		return nil, "", false, err
	}
	if cfg.Sizes, err = parseSizes(*sizeList, preset); err != nil {
		return nil, "", false, err
	}
	// The prompt experiment runs the kernels at their default sizes, and
	// at its own criteria, unless -size or -criteria say otherwise.
	if given["size"] {
		cfg.PromptSizes = cfg.Sizes
	}
	if given["criteria"] {
		cfg.PromptCriteria = cfg.Criteria
	}
	if *expList == "all" {
		cfg.Experiments = harness.Experiments
	} else if cfg.Experiments, err = parseList("experiments", *expList, func(s string) (string, error) { return s, nil }); err != nil {
		return nil, "", false, err
	}
	cfg.Driver = selfDriver(*driverNice)
	cfg.DumpDir = *out
	if err := cfg.Validate(); err != nil { // ranges, experiment names
		return nil, "", false, err
	}
	return cfg, *out, *progress, nil
}

// parseList reads the comma-separated values of a flag; its errors name
// the flag.
func parseList[T any](flagName, s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, fmt.Errorf("-%s: %w", flagName, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: no value given", flagName)
	}
	return out, nil
}

// parseInt and parseFloat are strconv's, with messages that do not name
// strconv.
func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

func parseFloat(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return x, nil
}

// parseKernels reads -kernels: kernels, and the prompt experiment's loads
// (harness.PromptLoads); "all" is every kernel and every load.
func parseKernels(s string) ([]kernels.Kernel, []string, error) {
	if s == "all" {
		return kernels.All(), harness.PromptLoads, nil
	}
	var ks []kernels.Kernel
	var loads []string
	_, err := parseList("kernels", s, func(name string) (struct{}, error) {
		if slices.Contains(harness.PromptLoads, name) {
			loads = append(loads, name)
			return struct{}{}, nil
		}
		k, err := kernels.Lookup(name)
		if err != nil {
			return struct{}{}, fmt.Errorf("%w (nor a load of the prompt experiment: %s)", err, strings.Join(harness.PromptLoads, ", "))
		}
		ks = append(ks, k)
		return struct{}{}, nil
	})
	return ks, loads, err
}

// parseSizes reads "name=N,..." with optional presets; preset applies
// first, then the list in order.
func parseSizes(s, preset string) (map[string]int, error) {
	sizes := make(map[string]int)
	apply := func(p string) {
		for _, k := range kernels.All() {
			switch p {
			case "quick":
				sizes[k.Name] = quickSizes[k.Name]
			case "default":
				sizes[k.Name] = k.DefaultSize
			case "paper":
				sizes[k.Name] = k.PaperSize
			}
		}
	}
	apply(preset)
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "quick" || f == "default" || f == "paper":
			apply(f)
		default:
			name, val, ok := strings.Cut(f, "=")
			if _, err := kernels.Lookup(name); !ok || err != nil {
				return nil, fmt.Errorf("-size: %q is not name=N with a known kernel, nor a preset (quick, default, paper)", f)
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-size: %q: %q is not a positive integer", f, val)
			}
			sizes[name] = n
		}
	}
	for name, n := range sizes {
		if n == 0 { // a kernel the quick table does not know
			k, _ := kernels.Lookup(name)
			sizes[name] = k.DefaultSize
		}
	}
	return sizes, nil
}

// loadAverage gives the system's load averages over 1, 5 and 15 minutes
// where the system tells them (Linux), for a reader to judge how busy the
// machine was; "" elsewhere.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}

// header opens the report: how it was made and on what.
func header(args []string, cfg *harness.Config, loadBefore, loadAfter string) string {
	var b strings.Builder
	b.WriteString("# fairbench report\n\n")
	fmt.Fprintf(&b, "Command: `%s`  \n", strings.Join(append([]string{"fairbench"}, args...), " "))
	fmt.Fprintf(&b, "Date: %s  \n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s  \n", goruntime.GOOS, goruntime.GOARCH, goruntime.NumCPU(), goruntime.Version())
	if loadBefore != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min): %s before, %s after  \n", loadBefore, loadAfter)
	}
	var sizes []string
	for _, k := range cfg.Kernels {
		sizes = append(sizes, fmt.Sprintf("%s %s=%d", k.Name, k.Unit, cfg.Sizes[k.Name]))
	}
	fmt.Fprintf(&b, "Sizes: %s  \n", strings.Join(sizes, ", "))
	if slices.Contains(cfg.Experiments, "prompt") {
		var ps []string
		for _, k := range cfg.Kernels {
			ps = append(ps, fmt.Sprintf("%s %s=%d", k.Name, k.Unit, cfg.PromptSize(k)))
		}
		controls := "with the plain-Go controls"
		if cfg.PromptNoControls {
			controls = "without the plain-Go controls"
		}
		fmt.Fprintf(&b, "Prompt experiment: sizes %s; loads %s; %g requests/s, at least %d a cell; %s  \n",
			strings.Join(ps, ", "), strings.Join(cfg.PromptLoads, ", "), cfg.PromptRate, cfg.PromptRequests, controls)
	}
	fmt.Fprintf(&b, "Repetitions: %d; echo: %g requests/s from a separate driver process  \n", cfg.Reps, cfg.EchoRate)
	b.WriteString("P is the number of fairly workers, or the GOMAXPROCS of plain goroutines " +
		"(fairly's runtime keeps one more P for wake-ups unless runtime.Config.KeepGOMAXPROCS is set).\n\n")
	return b.String()
}
