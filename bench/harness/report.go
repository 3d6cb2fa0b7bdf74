package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
)

// table is a markdown table.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

// Section is one table or figure of the report.
type Section struct {
	// Name is the experiment's name (of Experiments).
	Name  string
	Title string
	// Text says how to read the table.
	Text  string
	Table string
	// Chart is the PNG file name of a figure, written by WriteReport.
	Chart string
	draw  func(path string) error
}

// Markdown renders the section.
func (s Section) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n%s\n\n", s.Title, s.Text)
	if s.Table != "" {
		b.WriteString(s.Table + "\n")
	}
	if s.Chart != "" {
		fmt.Fprintf(&b, "![%s](%s)\n\n", s.Title, s.Chart)
	}
	return b.String()
}

// Sections builds the tables and figures of the experiments res ran, in
// the order of Experiments.
func Sections(res *Results) []Section {
	build := map[string]func(*Results) Section{
		"table1": table1, "table2": table2, "table3": table3, "table4": table4,
		"table5": table5, "fig8": fig8, "fig9": fig9, "stall": stallTable, "http": httpTable, "collector": collectorTable,
	}
	var out []Section
	for _, name := range slices.Concat(Experiments, OptionalExperiments) {
		if !slices.Contains(res.Experiments, name) {
			continue
		}
		switch name {
		case "sim": // several sections
			out = append(out, simSections(res)...)
			continue
		case "prompt":
			for _, s := range promptSections(res) {
				s.Name = name
				out = append(out, s)
			}
			continue
		}
		s := build[name](res)
		s.Name = name
		out = append(out, s)
	}
	return out
}

// times gives the run times of a record in seconds, nil for a missing one.
func times(rec *Record) []float64 {
	if rec == nil {
		return nil
	}
	return seconds(rec.Times)
}

// millis prints the run times of rec in milliseconds, or why it was
// skipped.
func millis(rec *Record) string {
	if rec != nil && rec.Skipped != "" {
		return "skipped: " + rec.Skipped
	}
	s := spreadOf(times(rec))
	s = Spread{Median: s.Median * 1e3, Min: s.Min * 1e3, Max: s.Max * 1e3, N: s.N}
	switch {
	case s.Median >= 100:
		return s.format(0, "")
	case s.Median >= 10:
		return s.format(1, "")
	}
	return s.format(2, "")
}

// over gives base's median divided by each run of rec, or each run over
// base's median when invert is set; nothing when base has no runs (it is
// missing or was skipped).
func over(base, rec *Record, invert bool) Spread {
	b := spreadOf(times(base))
	if b.N == 0 {
		return Spread{}
	}
	return spreadOf(ratios(b.Median, times(rec), invert))
}

// overSeq is over(seq, rec, invert) for the sequential baseline: T_seq/T
// of each run of rec, or T/T_seq when invert is set. Where rec has
// sequential runs paired with its own (Record.SeqRatios), each run is
// compared with its pair's, not with the median of seq, a step of its own.
func overSeq(seq, rec *Record, invert bool) Spread {
	if rec == nil || len(rec.SeqRatios) == 0 {
		return over(seq, rec, invert)
	}
	if invert {
		return spreadOf(rec.SeqRatios)
	}
	return spreadOf(ratios(1, rec.SeqRatios, false))
}

func echoLatency(rec *Record) Latency {
	if rec == nil || rec.Echo == nil {
		return Latency{}
	}
	return rec.measuredLatency()
}

func answered(rec *Record) string {
	if rec == nil || rec.Echo == nil {
		return "—"
	}
	return fmt.Sprintf("%d/%d", rec.Echo.Received, rec.Echo.Sent)
}

func latencyCells(rec *Record) []string {
	l := echoLatency(rec)
	if l.N == 0 {
		return []string{"—", "—", "—"}
	}
	return []string{ms(l.P50), ms(l.P99), ms(l.Max)}
}

func table1(res *Results) Section {
	t := table{head: []string{"kernel", "P", "alone (ms)"}}
	for _, c := range res.Criteria {
		t.head = append(t.head, fmt.Sprintf("%v (ms)", c), fmt.Sprintf("stretch %v (expected %.2f)", c, c.ExpectedStretch()))
	}
	for _, k := range res.Kernels {
		for _, p := range res.Procs {
			alone := res.find(Record{Kind: kindAlone, Kernel: k, Procs: p})
			row := []string{k, fmt.Sprint(p), millis(alone)}
			for _, c := range res.Criteria {
				rec := res.find(Record{Kind: kindLoaded, Kernel: k, Procs: p, Criterion: c.String()})
				row = append(row, millis(rec), over(alone, rec, true).format(2, ""))
			}
			t.add(row...)
		}
	}
	return Section{
		Title: "Table 1: stretch",
		Text: "The kernel runs at low priority, a time sink at medium priority and a network echo at high priority " +
			"(the driver sends requests at the echo rate). Stretch is the kernel's time under each criterion (high-medium-low) " +
			"over its time alone (criterion 0-0-100, nothing else running); the expected stretch is 1/F(low). " +
			"Times are medians of the repetitions with their range; a stretch's range comes from each run over the median time alone.",
		Table: t.String(),
	}
}

// slowStretch is how much slower than a kernel's fastest sequential run of
// a suite run the sequential runs of a step's pairs must be, at their
// median, for Table 2 to say that the step ran in one of the machine's slow
// stretches: forking code slows more in them than the sequential loop, so
// that even a paired ratio is off there.
const slowStretch = 1.3

// slowPairs names the rows of Table 2 whose pairs ran in a slow stretch,
// each with its sequential median over the kernel's fastest sequential run.
func slowPairs(res *Results) []string {
	fastest := map[string]time.Duration{}
	for _, rec := range res.Records {
		ts := rec.SeqTimes
		if rec.Kind == kindSeq {
			ts = rec.Times
		} else if rec.Kind != kindAlone {
			continue
		}
		for _, d := range ts {
			if f, ok := fastest[rec.Kernel]; d > 0 && (!ok || d < f) {
				fastest[rec.Kernel] = d
			}
		}
	}
	var out []string
	for _, k := range res.Kernels {
		for _, grain := range []string{"", grainFine} {
			for _, p := range res.Procs {
				rec := res.find(Record{Kind: kindAlone, Kernel: k, Procs: p, Grain: grain})
				if rec == nil || len(rec.SeqTimes) == 0 || fastest[k] == 0 {
					continue
				}
				if x := spreadOf(seconds(rec.SeqTimes)).Median / fastest[k].Seconds(); x >= slowStretch {
					out = append(out, fmt.Sprintf("%s P=%d (%.2f×)", strings.TrimSpace(k+" "+grain), p, x))
				}
			}
		}
	}
	return out
}

func table2(res *Results) Section {
	t := table{head: []string{"kernel", "P", "sequential (ms)", "goroutines (ms)", "fairly (ms)", "T_seq/T_fairly", "T_goroutines/T_fairly", "T1/T_seq"}}
	for _, k := range res.Kernels {
		seq := res.find(Record{Kind: kindSeq, Kernel: k})
		rows := func(name, grain string, gorGrain string) {
			one := res.find(Record{Kind: kindAlone, Kernel: k, Procs: 1, Grain: grain})
			for _, p := range res.Procs {
				gor := res.find(Record{Kind: kindGoroutines, Kernel: k, Procs: p, Grain: gorGrain})
				fair := res.find(Record{Kind: kindAlone, Kernel: k, Procs: p, Grain: grain})
				t.add(name, fmt.Sprint(p), millis(seq), millis(gor), millis(fair), overSeq(seq, fair, false).format(2, "×"),
					over(gor, fair, false).format(2, "×"), overSeq(seq, one, true).format(2, "×"))
			}
		}
		rows(k, "", "")
		info, _ := kernels.Lookup(k) // a zero Kernel for a name this version does not know
		switch {
		case info.FineOf != "":
			same := "= " + info.FineOf + " fine"
			if !slices.Contains(res.Kernels, info.FineOf) {
				same += " (" + info.FineOf + " not run)"
			}
			for _, p := range res.Procs {
				t.add(k+" fine", fmt.Sprint(p), millis(seq), same, same, same, same, same)
			}
		case info.GoroutinesFine:
			rows(k+" fine", grainFine, "")
		default:
			rows(k+" fine", grainFine, grainFine)
		}
	}
	slow := "none"
	if rows := slowPairs(res); len(rows) > 0 {
		slow = strings.Join(rows, "; ")
	}
	return Section{
		Title: "Table 2: speedups",
		Text: "Each kernel alone: its sequential baseline, its plain-goroutine version (GOMAXPROCS = P) and its fairly version " +
			"(P workers, the kernel at low priority with every share, as \"alone\" in Table 1). " +
			"Each fairly repetition runs right after a sequential run of the same input in the same step, and its ratios to the sequential time are to that run: " +
			"T_seq/T_fairly is each pair's sequential time over its fairly time, median (range); higher is better. " +
			"T1/T_seq is each pair's fairly time over its sequential time at P = 1: the version's cost of forking (lower is better); TP/T_seq at P is the reciprocal of T_seq/T_fairly. " +
			"Pairing keeps the ratios steady through the stretches in which the machine runs slower (results without pairs divide by the sequential column's median). " +
			"The sequential column and the goroutine runs are steps of their own; T_goroutines/T_fairly is the goroutines' median over each fairly run. " +
			fmt.Sprintf("Rows whose paired sequential runs took at their median %.1f× the kernel's fastest sequential run or longer ran in a slow stretch of the machine, in which forking code slows more than the sequential loop, so their ratios may be off: %s. ",
				slowStretch, slow) +
			"The rows \"<kernel> fine\" are the fine-grained versions (kernels.FineInstance): the same algorithm with no hand-tuned grain or cutoff, " +
			"thread.Fork2 at every recursive call and thread.For over every element, down to the algorithm's natural base case; " +
			"their goroutine version has a go statement at every fork. fib and uts fork a goroutine at every call already, so their goroutine time is repeated; " +
			"where the fine goroutine version starts a goroutine per vertex or key (bfs, sort) it is skipped, with the reason. fib-cutoff without its cutoff is fib.",
		Table: t.String(),
	}
}

func table3(res *Results) Section {
	t := table{head: append([]string{"kernel", "P", "fairly (ms)", "T_seq/T", "echo p50 (ms)", "p99 (ms)", "max (ms)", "answered"}, partsHead...)}
	var floor []string
	for _, p := range res.Procs {
		if l := echoLatency(res.find(Record{Kind: kindWTAIdle, Kernel: "idle", Procs: p})); l.N > 0 {
			floor = append(floor, fmt.Sprintf("P=%d p50 %s ms, p99 %s ms, max %s ms", p, ms(l.P50), ms(l.P99), ms(l.Max)))
		}
	}
	for _, k := range res.Kernels {
		seq := res.find(Record{Kind: kindSeq, Kernel: k})
		for _, p := range res.Procs {
			rec := res.find(Record{Kind: kindWTA, Kernel: k, Procs: p})
			t.add(slices.Concat([]string{k, fmt.Sprint(p), millis(rec), over(seq, rec, false).format(2, "×")}, latencyCells(rec), []string{answered(rec)}, partsCells(rec))...)
		}
	}
	return Section{
		Title: "Table 3: winner-take-all",
		Text: fmt.Sprintf("A network echo at high priority and the kernel at low priority, with every share given to the high priority: "+
			"the kernel runs only on the cycles the echo leaves. Response times are pooled over the repetitions. "+
			"The floor, the echo alone on the runtime for %v in the same run: %s. ", res.EchoFor, orNone(floor)) + partsText,
		Table: t.String(),
	}
}

// orNone joins parts, or says that there are none.
func orNone(parts []string) string {
	if len(parts) == 0 {
		return "not measured"
	}
	return strings.Join(parts, "; ")
}

func table4(res *Results) Section {
	t := table{head: []string{"kernel", "P", "speedup 0-0-100"}}
	for _, c := range res.Criteria {
		t.head = append(t.head, fmt.Sprintf("normalised speedup %v", c), fmt.Sprintf("echo p50/p99 %v (ms)", c))
	}
	for _, k := range res.Kernels {
		seq := res.find(Record{Kind: kindSeq, Kernel: k})
		for _, p := range res.Procs {
			alone := res.find(Record{Kind: kindAlone, Kernel: k, Procs: p})
			row := []string{k, fmt.Sprint(p), over(seq, alone, false).format(2, "×")}
			for _, c := range res.Criteria {
				rec := res.find(Record{Kind: kindLoaded, Kernel: k, Procs: p, Criterion: c.String()})
				norm := over(seq, rec, false)
				e := c.ExpectedStretch()
				norm = Spread{Median: norm.Median * e, Min: norm.Min * e, Max: norm.Max * e, N: norm.N}
				l := echoLatency(rec)
				lat := "—"
				if l.N > 0 {
					lat = ms(l.P50) + " / " + ms(l.P99)
				}
				row = append(row, norm.format(2, "×"), lat)
			}
			t.add(row...)
		}
	}
	return Section{
		Title: "Table 4: normalised speedups and response times",
		Text: "The runs of Table 1. The normalised speedup is the speedup over the sequential baseline times the expected stretch, " +
			"so that a perfectly fair scheduler scores the kernel's speedup alone (at most P). Response times of the high-priority echo.",
		Table: t.String(),
	}
}

func table5(res *Results) Section {
	t := table{head: append([]string{"grain", "P", "system", "fib time (ms)", "fib runs", "echo p50 (ms)", "p99 (ms)", "max (ms)", "answered", "p99 / fairly p99"}, partsHead...)}
	n := 0
	for _, g := range []string{grainIdle, grainFine, grainCoarse} {
		for _, p := range res.Procs {
			fair := res.find(Record{Kind: kindFib, Grain: g, Procs: p, System: sysFairly})
			for _, sys := range []string{sysFairly, sysGoroutines} {
				rec := res.find(Record{Kind: kindFib, Grain: g, Procs: p, System: sys})
				if rec == nil {
					continue
				}
				n = rec.Size
				ratio := "—"
				if lf, l := echoLatency(fair), echoLatency(rec); sys == sysGoroutines && lf.P99 > 0 && l.N > 0 {
					ratio = factor(float64(l.P99) / float64(lf.P99))
				}
				row := []string{g, fmt.Sprint(p), sys, millis(rec), fmt.Sprint(len(rec.Times))}
				t.add(slices.Concat(row, latencyCells(rec), []string{answered(rec), ratio}, partsCells(rec))...)
			}
		}
	}
	return Section{
		Title: "Table 5: Fibonacci and network echo, fairly against plain goroutines",
		Text: fmt.Sprintf("fib(%d) repeats while the driver replays %v of requests at %g/s against a network echo (a thread or goroutine per connection). "+
			"Fine grain forks at every call, coarse grain is sequential at n ≤ %d (fairly forks with thread.Fork2, goroutines with go and a WaitGroup); idle runs the echo alone. "+
			"On fairly the echo runs at high priority and fib at low, criterion 50-50; plain goroutines have GOMAXPROCS = P and no priorities. "+
			"The column p99 / fairly p99 is the goroutines' p99 over fairly's at the same grain and P (higher means fairly responds faster). ",
			n, res.EchoFor, res.EchoRate, coarseCutoff) + partsText,
		Table: t.String(),
	}
}

// collectorTable sets Table 5's fine grain written with thread.Spawn,
// which allocates at every fork, beside the same fib written with
// thread.Fork2, which does not: what the collector adds to the echo's tail.
func collectorTable(res *Results) Section {
	t := table{head: []string{"fork", "P", "fib time (ms)", "fib runs", "echo p50 (ms)", "p99 (ms)", "max (ms)", "answered", "collections/s", "longest pause (ms)"}}
	n := 0
	for _, p := range res.Procs {
		for _, g := range []string{grainSpawn, grainFork2} {
			rec := res.find(Record{Kind: kindCollector, Grain: g, Procs: p, System: sysFairly})
			if rec == nil {
				continue
			}
			n = rec.Size
			fork := "thread.Spawn"
			if g == grainFork2 {
				fork = "thread.Fork2"
			}
			row := []string{fork, fmt.Sprint(p), millis(rec), fmt.Sprint(len(rec.Times))}
			row = append(append(row, latencyCells(rec)...), answered(rec))
			if c := rec.Collector; c != nil {
				row = append(row, fmt.Sprintf("%.1f", c.PerSecond), fmt.Sprintf("%.2f", float64(c.LongestPause)/1e6))
			} else {
				row = append(row, "—", "—")
			}
			t.add(row...)
		}
	}
	return Section{
		Title: "Collector: the echo beside fine-grained fib with and without allocation",
		Text: fmt.Sprintf("Table 5's fine-grained fairly setting (fib(%d) forking at every call, repeating at low priority, a network echo at high, criterion 50-50, %v of requests at %g/s), "+
			"with a thread.Spawn at every call (two allocations a fork) and with thread.Fork2 at every call (none), "+
			"and the collector's cycles per second and longest stop-the-world pause over each run.", n, res.EchoFor, res.EchoRate),
		Table: t.String(),
	}
}

// factor prints a ratio with two significant digits or so.
func factor(x float64) string {
	switch {
	case x >= 10:
		return fmt.Sprintf("%.0f×", x)
	case x >= 1:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

func fig8(res *Results) Section {
	t := table{head: []string{"kernel"}}
	for _, c := range res.Criteria {
		for _, p := range res.Procs {
			t.head = append(t.head, fmt.Sprintf("%v P=%d", c, p))
		}
	}
	for _, k := range res.Kernels {
		row := []string{k}
		for _, c := range res.Criteria {
			for _, p := range res.Procs {
				row = append(row, stretchRatio(res, k, p, c).format(2, ""))
			}
		}
		t.add(row...)
	}
	return Section{
		Title: "Figure 8: actual over expected stretch",
		Text:  "The stretches of Table 1 divided by the expected stretch. 1.0 is perfectly fair; the goal is at most 1.15.",
		Table: t.String(),
		Chart: "fig8.png",
		draw:  func(path string) error { return drawFig8(res, path) },
	}
}

// stretchRatio is the measured stretch of kernel k over the expected one.
func stretchRatio(res *Results, k string, p int, c Criterion) Spread {
	alone := res.find(Record{Kind: kindAlone, Kernel: k, Procs: p})
	rec := res.find(Record{Kind: kindLoaded, Kernel: k, Procs: p, Criterion: c.String()})
	s, e := over(alone, rec, true), c.ExpectedStretch()
	return Spread{Median: s.Median / e, Min: s.Min / e, Max: s.Max / e, N: s.N}
}

func fig9(res *Results) Section {
	t := table{head: []string{"interactive share (%)", "criterion", "P", "echo p50 (ms)", "p99 (ms)", "max (ms)", "answered", "fib runs"}}
	n := 0
	for _, p := range res.Procs {
		for _, sh := range res.Shares {
			rec := res.find(Record{Kind: kindShare, Procs: p, Share: sh})
			if rec == nil {
				continue
			}
			n = rec.Size
			t.add(append(append([]string{num(sh), rec.Criterion, fmt.Sprint(p)}, latencyCells(rec)...), answered(rec), fmt.Sprint(len(rec.Times)))...)
		}
	}
	return Section{
		Title: "Figure 9: response time against the interactive share",
		Text: fmt.Sprintf("A terminal echo at high priority talks to the driver over pipes (%g requests/s for %v) while a time sink runs at medium priority "+
			"and fib(%d), forking at every call, repeats at low priority. The criterion is share-(50-share)-50.", res.EchoRate, res.EchoFor, n),
		Table: t.String(),
		Chart: "fig9.png",
		draw:  func(path string) error { return drawFig9(res, path) },
	}
}

// Markdown renders every section, for a terminal.
func Markdown(res *Results) string {
	var b strings.Builder
	for _, s := range Sections(res) {
		s.Chart = ""
		b.WriteString(s.Markdown())
	}
	return b.String()
}

// WriteReport writes the report folder dir: report.md (header, then every
// section), its PNG charts, and results.json with the raw measurements.
func WriteReport(dir, header string, res *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header)
	var errs []error
	for _, s := range Sections(res) {
		if s.draw != nil {
			if err := s.draw(filepath.Join(dir, s.Chart)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.Chart, err))
				s.Chart = ""
			}
		}
		b.WriteString(s.Markdown())
	}
	fmt.Fprintf(&b, "_The suite took %v._\n", res.Elapsed.Round(time.Second))
	errs = append(errs, os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644))
	data, err := json.MarshalIndent(res, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "results.json"), data, 0o644)
	}
	return errors.Join(append(errs, err)...)
}
