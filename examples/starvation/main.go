// Command starvation runs the priority-starvation experiment on fairly's
// job scheduler, jobs.
//
// One server (or two) serves two classes: frequent short hi jobs and rare
// long lo jobs, with Poisson arrivals and exponential service times, as in
// the notebook that fairly's job layer was designed from. Five ways of
// configuring jobs are compared as the hi class's load ρ_H grows: static
// priority, stepwise aging, Smith's rule with linear aging, fair queuing
// with a key per class and weighted groups. The experiment drives the
// real scheduler on a virtual clock (see driver.go), so what it measures is
// the scheduler users run.
//
// It prints a table of waits per policy and class, writes charts to a
// temporary folder (or to -out), and checks static priority against
// Cobham's formula.
//
// Usage:
//
//	go run ./examples/starvation                   # the sweep, table and charts, under a minute
//	go run ./examples/starvation -json rows.json   # ... and the table as JSON
//	go run ./examples/starvation -check            # static priority against Cobham's formula, at full size
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command line's settings.
type options struct {
	plan     Plan
	out      string
	jsonFile string
	check    bool
	progress bool
	charts   bool
}

// run is the command without the process around it. It returns the exit
// code: 0 (also for -h), 2 after a mistake on the command line, 1 when the
// run fails; the error goes to stderr on a line that starts "starvation: ".
func run(args []string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "starvation: %v\nRun 'starvation -h' for the flags.\n", err)
		return 2
	}
	if err := execute(opt, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "starvation: %v\n", err)
		return 1
	}
	return 0
}

// execute runs the experiment of opt: the check, or the sweep with its
// table and charts.
func execute(opt *options, stdout, stderr io.Writer) error {
	// One worker: the job bodies only wait, and an idle second worker would
	// spin for work against the driver's goroutines on a 2-core machine.
	env, err := NewEnv(1)
	if err != nil {
		return err
	}
	defer env.Close()
	var progress func(done, total int)
	if opt.progress && isTerminal(stderr) {
		progress = progressBar(stderr)
	}
	start := time.Now()
	res, err := Execute(env, opt.plan, progress)
	if err != nil {
		return err
	}
	done := fmt.Sprintf("\n%d simulations in %.1fs\n", len(res.Rows)/nClasses*opt.plan.Seeds+len(res.Series), time.Since(start).Seconds())
	if opt.jsonFile != "" {
		if err := writeJSON(opt.jsonFile, res.Rows); err != nil {
			return err
		}
	}
	if opt.check {
		fmt.Fprintf(stdout, "Static priority on jobs against Cobham's formula (ρ_L = %g, %d seeds of %gs):\n\n",
			opt.plan.RhoLo, opt.plan.Seeds, opt.plan.Horizon)
		ok := printCheck(stdout, checkRows(res.Rows))
		fmt.Fprint(stdout, done)
		if !ok {
			return fmt.Errorf("the check failed: a relative error above %.0f%%", 100*checkTolerance)
		}
		return nil
	}
	printTable(stdout, res)
	fmt.Fprint(stdout, done)
	if opt.charts {
		dir := opt.out
		if dir == "" { // not the working directory: running the example leaves no trace there
			if dir, err = os.MkdirTemp("", "starvation-charts-"); err != nil {
				return err
			}
		}
		paths, err := drawCharts(res, dir)
		if err != nil {
			return fmt.Errorf("charts: %w", err)
		}
		fmt.Fprintf(stdout, "charts: %s\n", strings.Join(paths, ", "))
	}
	return nil
}

// isTerminal reports whether w is a terminal: the progress bar redraws its
// line with carriage returns, which only a terminal shows as one line; a
// log or a pipe gets the closing count of simulations alone.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressBar shows finished simulations on w, as fairbench does.
func progressBar(w io.Writer) func(done, total int) {
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetDescription("simulations"), progressbar.OptionShowElapsedTimeOnFinish())
		}
		_ = bar.Set(done)
		if done == total {
			_ = bar.Finish()
			fmt.Fprintln(w)
		}
	}
}

// defaultRhos is the sweep of ρ_H: the notebook's range, denser near the
// top where waits change fastest.
const defaultRhos = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.75,0.8,0.85,0.9,0.95"

// checkRhos are the loads the check covers by default.
const checkRhos = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8"

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("starvation", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints a mistake, once; -h prints the usage below
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: starvation [flags]\n\n"+
			"Runs the priority-starvation experiment on fairly's job scheduler: a table of waits\n"+
			"per policy, class and load, PNG charts, and with -check the comparison of static\n"+
			"priority with Cobham's formula. Policies: %s.\n\n", policyNames())
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "folder for the PNG charts (default: a new temporary folder, printed at the end)")
	jsonFile := fs.String("json", "", "also write the table as a JSON array of rows to this file")
	rhoList := fs.String("rho-hi", "", "comma-separated loads ρ_H of the hi class, each in (0, 1) (default "+defaultRhos+"; with -check "+checkRhos+")")
	rhoLo := fs.Float64("rho-lo", notebookRhoLo, "load ρ_L of the lo class, in [0, 1)")
	policyList := fs.String("policies", "all", "comma-separated policies, or all")
	slotList := fs.String("slots", "1,2", "comma-separated slot counts, each 1 to 64 (exponential service)")
	heavy := fs.Bool("heavy", true, "also sweep one slot with heavy-tailed (lognormal) service times")
	seeds := fs.Int("seeds", 3, "seeds per point; the charts show their spread")
	seed := fs.Uint64("seed", 1, "first seed; a run is determined by its seeds")
	horizon := fs.Float64("horizon", 0, "seconds of arrivals per simulation, at least 60 (default 1500; with -check 200000)")
	series := fs.Float64("series-rho", 0.9, "ρ_H of the time-series chart, in (0, 1)")
	seriesLo := fs.Float64("series-rho-lo", 0.05, "ρ_L of the time-series chart, in [0, 1)")
	parallel := fs.Int("parallel", 8, "simulations run at once (they mostly wait on each other's hand-offs, not on a core)")
	check := fs.Bool("check", false, "check static priority against Cobham's formula at full size instead of the sweep")
	progress := fs.Bool("progress", true, "show a progress bar on standard error, if it is a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o := &options{out: *out, jsonFile: *jsonFile, check: *check, progress: *progress, charts: !*check}
	p := &o.plan
	if *rhoList == "" {
		*rhoList = defaultRhos
		if *check {
			*rhoList = checkRhos
		}
	}
	var err error
	if p.RhoHi, err = parseList(*rhoList, parseFloat); err != nil {
		return nil, fmt.Errorf("-rho-hi: %v", err)
	}
	for _, r := range p.RhoHi {
		if !(r > 0 && r < 1) {
			return nil, fmt.Errorf("-rho-hi: %v is not in (0, 1)", r)
		}
	}
	if !(*rhoLo >= 0 && *rhoLo < 1) {
		return nil, fmt.Errorf("-rho-lo: %v is not in [0, 1)", *rhoLo)
	}
	p.RhoLo = *rhoLo
	if !(*seriesLo >= 0 && *seriesLo < 1) {
		return nil, fmt.Errorf("-series-rho-lo: %v is not in [0, 1)", *seriesLo)
	}
	if *series != 0 && !(*series > 0 && *series < 1) {
		return nil, fmt.Errorf("-series-rho: %v is not in (0, 1)", *series)
	}
	if err := errors.Join(between("seeds", *seeds, 1, 1000), between("parallel", *parallel, 1, 256)); err != nil {
		return nil, err
	}
	if *horizon == 0 {
		*horizon = 1500
		if *check {
			*horizon = 200_000
		}
	}
	if !(*horizon >= 2*window) || *horizon > 1e8 {
		return nil, fmt.Errorf("-horizon: %v is not in [%g, 1e8] seconds", *horizon, 2*window)
	}
	p.Seeds, p.Seed, p.Horizon, p.Parallel = *seeds, *seed, *horizon, *parallel
	if *policyList == "all" {
		p.Policies = policies
	} else {
		for name := range strings.SplitSeq(*policyList, ",") {
			pol, ok := findPolicy(strings.TrimSpace(name))
			if !ok {
				return nil, fmt.Errorf("-policies: unknown policy %q (known: %s)", name, policyNames())
			}
			p.Policies = append(p.Policies, pol)
		}
	}
	if *check {
		// Cobham's formula is for static priority on one slot.
		static, _ := findPolicy("static")
		p.Policies, p.Setups = []Policy{static}, []Setup{{Slots: 1, Dist: distExp}}
		return o, nil
	}
	slots, err := parseList(*slotList, strconv.Atoi)
	if err != nil {
		return nil, fmt.Errorf("-slots: %v", err)
	}
	for _, n := range slots {
		if n < 1 || n > 64 {
			return nil, fmt.Errorf("-slots: %d is not in 1..64", n)
		}
		p.Setups = append(p.Setups, Setup{Slots: n, Dist: distExp})
	}
	if *heavy {
		p.Setups = append(p.Setups, Setup{Slots: 1, Dist: distLognormal})
	}
	p.SeriesRho, p.SeriesRhoLo = *series, *seriesLo
	for _, name := range seriesPolicies {
		if pol, ok := findPolicy(name); ok {
			p.SeriesPolicies = append(p.SeriesPolicies, pol)
		}
	}
	return o, nil
}

// seriesPolicies are the policies of the time-series chart: the starving
// one, the oscillating one and the smooth one.
var seriesPolicies = []string{"static", "aging", "wfq"}

// parseList reads a comma-separated list of values.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a valid value", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// writeJSON writes the rows as an indented JSON array.
func writeJSON(path string, rows []Row) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// between checks that the value v of the flag name is in [lo, hi].
func between[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("-%s %v is not between %v and %v", name, v, lo, hi)
}
