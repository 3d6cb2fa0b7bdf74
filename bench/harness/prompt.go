package harness

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// The prompt experiment settles promptness in one run: a network echo at
// high priority beside one load per cell, under each criterion, with enough
// requests per cell for a p99 and a p99.9 to mean something. A time sink
// runs at medium priority where the criterion gives medium a share (a sink
// beside a medium share of 0 would take the low priority's leftovers, and
// 100-0-0 would starve the kernel). Each processor count starts with the
// echo alone, the floor every cell is divided by.

// Kinds of the prompt experiment's records.
const (
	kindPrompt     = "prompt"
	kindPromptIdle = "prompt-idle"
)

// PromptCriteria are the prompt experiment's criteria unless
// Config.PromptCriteria chooses others.
var PromptCriteria = []Criterion{{100, 0, 0}, {50, 0, 50}, {50, 25, 25}, {5, 45, 50}}

// Defaults of the prompt experiment.
const (
	// DefaultPromptRate is its echo rate: 2000 requests in 2.5 s, over
	// promptConns connections.
	DefaultPromptRate = 800
	// promptConns is the number of the driver's connections, 50 requests/s
	// each at the default rate, the suite's rate for one echo. A
	// connection's lines are echoed one after another, each through an
	// Await, so a late wake-up delays every line queued behind it; over one
	// connection at this rate the echo measured its own queue rather than
	// the wake-up of each line (bench/README.md, the prompt experiment).
	promptConns = 16
	// DefaultPromptRequests is how many requests each cell measures at
	// least.
	DefaultPromptRequests = 2000
	// promptAllocMiB is the size of the alloc load's fresh slice.
	promptAllocMiB = 8
)

// PromptLoads are the prompt experiment's loads other than the kernels,
// in the order of its table. Each runs at low priority:
//   - alloc: one thread per worker repeating a library call with no
//     preemption point that allocates: a fresh copy of 8 MiB, hashed.
//   - batch: one thread running thread.Fork2's fib(32) over and over.
//   - batch+1go, batch+2go: the batch thread, and one or two ordinary
//     goroutines outside fairly computing SHA-256 in a loop, as a real
//     program's other goroutines do.
var PromptLoads = []string{"alloc", "batch", "batch+1go", "batch+2go"}

// promptGoroutines is the number of ordinary goroutines beside a batch load.
func promptGoroutines(load string) int {
	switch load {
	case "batch+1go":
		return 1
	case "batch+2go":
		return 2
	}
	return 0
}

// PromptSummary is what a prompt record reports of its measured requests,
// flat in results.json beside the record's kind, kernel (or load), procs
// and criterion. Times are in milliseconds.
type PromptSummary struct {
	// Load repeats the record's kernel field: a kernel's name or one of
	// PromptLoads.
	Load     string  `json:"load"`
	Requests int     `json:"requests"`
	Lost     int     `json:"lost"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	P999     float64 `json:"p999_ms"`
	Max      float64 `json:"max_ms"`
	// IdleP99 is the p99 of the echo alone at the same procs in the same
	// run; Ratio is P99 over it.
	IdleP99 float64 `json:"idle_p99_ms"`
	Ratio   float64 `json:"ratio"`
	// The parts' p99s (EchoParts).
	DeliveryP99 float64 `json:"delivery_p99_ms"`
	FairlyP99   float64 `json:"fairly_p99_ms"`
	ReplyP99    float64 `json:"reply_p99_ms"`
	// GCCycles and GCMaxPause are the collector's cycles and longest
	// stop-the-world pause in the measured span.
	GCCycles   uint32  `json:"gc_cycles"`
	GCMaxPause float64 `json:"gc_max_pause_ms"`
	// GOMAXPROCSChanges counts the stop-the-world pauses other than the
	// collector's in the measured span: changes of GOMAXPROCS, the only
	// other cause in a run of the harness (Collector.OtherPauses).
	GOMAXPROCSChanges uint64 `json:"gomaxprocs_changes"`
	// AllocRate is the MiB the process allocated a second over the
	// measured span (Collector.AllocPerSecond): what drives the collector.
	AllocRate float64 `json:"alloc_mib_per_s"`
	// Control names a control's record (kind prompt_control): "plain",
	// "floor" or "floor-alloc" (prompt_controls.go); empty in a fairly
	// cell's.
	Control string `json:"control,omitempty"`
	// BatchRate is fib(n) computed per second by the batch of batch,
	// batch+1go and batch+2go over the measured span (by all its
	// goroutines in a control), and HashRate the MiB per second hashed by
	// the ordinary goroutines of batch+1go and batch+2go: what the load
	// got done while the echo answered. Zero for other loads.
	BatchRate float64 `json:"batch_fib_per_s"`
	HashRate  float64 `json:"hash_mib_per_s"`
}

// batchWork counts what a batch load gets done: passes of fib(n) and
// bytes hashed by its ordinary goroutines.
type batchWork struct{ fibs, hashed atomic.Int64 }

// measure runs rec.measure over wait and returns the fib(n) a second and
// the MiB hashed a second in it.
func (w *batchWork) measure(rec *Record, wait func()) (fibs, mib float64) {
	f0, h0, t0 := w.fibs.Load(), w.hashed.Load(), time.Now()
	_ = rec.measure(func() error { wait(); return nil })
	d := time.Since(t0).Seconds()
	return float64(w.fibs.Load()-f0) / d, float64(w.hashed.Load()-h0) / (1 << 20) / d
}

// promptRate and promptRequests are the experiment's settings or their
// defaults.
func (c *Config) promptRate() float64 {
	if c.PromptRate > 0 {
		return c.PromptRate
	}
	return DefaultPromptRate
}

func (c *Config) promptRequests() int {
	if c.PromptRequests > 0 {
		return c.PromptRequests
	}
	return DefaultPromptRequests
}

func (c *Config) promptCriteria() []Criterion {
	if len(c.PromptCriteria) > 0 {
		return c.PromptCriteria
	}
	return PromptCriteria
}

// PromptSize is the size of a kernel in the prompt experiment: its
// default unless PromptSizes says otherwise.
func (c *Config) PromptSize(k kernels.Kernel) int {
	if n, ok := c.PromptSizes[k.Name]; ok {
		return n
	}
	return k.DefaultSize
}

// promptBatchFib is the n of the batch thread's fib: fib's size in the
// experiment.
func (c *Config) promptBatchFib() int {
	k, err := kernels.Lookup("fib")
	if err != nil {
		panic(err) // the kernels package always has fib
	}
	return c.PromptSize(k)
}

// promptSteps are the experiment's cells: at each processor count the
// idle echo first, then every load under every criterion, each load's
// floor control right after its cells (so that the two see the machine
// alike); the plain controls come last (promptPlainSteps).
func (s *suite) promptSteps() []step {
	var steps []step
	add := func(name string, run func() (*Record, error)) { steps = append(steps, step{name: name, run: run}) }
	floor := func(load string, k *kernels.Kernel, p int) {
		if !canIdleThreads || s.cfg.PromptNoControls {
			return
		}
		controls := []string{controlFloor}
		if k != nil {
			controls = append(controls, controlFloorAlloc) // after the cells whose allocation it matches
		}
		for _, ctl := range controls {
			add(fmt.Sprintf("prompt %s %s P=%d", load, ctl, p), func() (*Record, error) { return s.promptControl(load, k, p, ctl) })
		}
	}
	for _, p := range s.cfg.Procs {
		add(fmt.Sprintf("prompt idle P=%d", p), func() (*Record, error) { return s.promptIdle(p) })
		for _, k := range s.cfg.Kernels {
			for _, c := range s.cfg.promptCriteria() {
				add(fmt.Sprintf("prompt %s %v P=%d", k.Name, c, p), func() (*Record, error) { return s.promptKernel(k, p, c) })
			}
			floor(k.Name, &k, p)
		}
		for _, l := range s.cfg.PromptLoads {
			for _, c := range s.cfg.promptCriteria() {
				add(fmt.Sprintf("prompt %s %v P=%d", l, c, p), func() (*Record, error) { return s.promptLoad(l, p, c) })
			}
			floor(l, nil, p)
		}
	}
	return append(steps, s.promptPlainSteps()...)
}

// promptScriptFor bounds a cell's replay: far longer than a cell lasts, and
// within the driver's million requests at MaxEchoRate.
const promptScriptFor = 90 * time.Second

// promptScript is the open-ended trace of a prompt cell at the
// experiment's rate.
func (c *Config) promptScript() string {
	return fmt.Sprintf("pause %v; payload 64; rate %g/s for %v", settle, c.promptRate(), promptScriptFor)
}

// enough reports whether the echo has answered the cell's requests since
// it had answered from: the target, and a margin for those that were
// sent before the load started (up to one a connection in flight) or
// were left unanswered.
func (c *Config) enough(srv *interactive.Server, from int64) bool {
	return srv.Echoed()-from >= c.enoughEchoes()
}

// enoughEchoes is the count enough waits for.
func (c *Config) enoughEchoes() int64 {
	n := int64(c.promptRequests())
	return n + n/50 + promptConns
}

// waitEnough sleeps until enough (above) holds: first for the time the
// requests take at the rate, then in short steps. Nothing else of the
// harness runs meanwhile.
func (c *Config) waitEnough(srv *interactive.Server, from int64) {
	time.Sleep(time.Duration(float64(c.enoughEchoes()) / c.promptRate() * float64(time.Second)))
	for !c.enough(srv, from) {
		time.Sleep(20 * time.Millisecond)
	}
}

// promptIdle is the echo alone on a runtime of procs workers, criterion
// 100-0-0: the floor of the cells at procs.
func (s *suite) promptIdle(procs int) (*Record, error) {
	c := Criterion{100, 0, 0}
	rec := &Record{Kind: kindPromptIdle, Kernel: "idle", Procs: procs, Criterion: c.String()}
	_, rt, echo, err := s.echoOnConns(procs, c, s.cfg.promptScript(), promptConns)
	if err != nil {
		return nil, err
	}
	gc := startCollector()
	from := echo.srv.Echoed()
	_ = rec.measure(func() error { s.cfg.waitEnough(echo.srv, from); return nil })
	rec.Collector = gc.stop()
	err = closeAll(closeEcho(nil, echo, rec), rt.Close())
	s.promptSummary(rec)
	if s.prompt.idleP99 == nil {
		s.prompt.idleP99 = make(map[int]float64)
	}
	s.prompt.idleP99[procs] = rec.PromptSummary.P99
	return rec, err
}

// promptKernel is a cell of a kernel: it repeats at low priority until
// the echo has answered the cell's requests, and its last run's result is
// checked once the echo has ended.
func (s *suite) promptKernel(k kernels.Kernel, procs int, c Criterion) (*Record, error) {
	inst := s.promptInstance(k)
	rec := &Record{Kind: kindPrompt, Kernel: k.Name, Size: s.cfg.PromptSize(k), Procs: procs, Criterion: c.String()}
	err := s.promptCell(rec, procs, c, func(rt *runtime.Runtime, lo fairness.Priority, srv *interactive.Server, from int64) error {
		// One span for the whole loop: between two runs the harness only
		// notes the time (room made in advance) and reads a counter.
		rec.Times = make([]time.Duration, 0, 1024)
		return rec.measure(func() error {
			for {
				start := time.Now()
				if err := kernels.RunVersion(rt, lo, inst.Fairly); err != nil {
					return err
				}
				rec.Times = append(rec.Times, time.Since(start))
				if s.cfg.enough(srv, from) {
					return nil
				}
			}
		})
	})
	if err == nil {
		err = inst.Check()
	}
	return rec, err
}

// promptInstance is the input of kernel k at its size in the experiment,
// made once for the cells that run it one after another; one input is
// alive at a time.
func (s *suite) promptInstance(k kernels.Kernel) kernels.Instance {
	n := s.cfg.PromptSize(k)
	if s.prompt.kernel != k.Name || s.prompt.size != n {
		s.prompt.inst = nil // let the last one go before making the next
		s.prompt.inst, s.prompt.kernel, s.prompt.size = k.New(n), k.Name, n
	}
	return s.prompt.inst
}

// promptAllocInput is the alloc load's input, made before the echo starts.
func promptAllocInput() []byte {
	return bytes.Repeat([]byte("fairly prompt "), promptAllocMiB<<20/14)
}

// allocLoop is a goroutine or thread of the alloc load: a library call
// with no preemption point that allocates, a fresh copy of in hashed,
// until stop.
func allocLoop(stop *atomic.Bool, in []byte) {
	for !stop.Load() {
		sha256.Sum256(bytes.Clone(in))
	}
}

// hashLoop is an ordinary goroutine of batch+1go and batch+2go: SHA-256
// in a loop until stop, with no preemption point but Go's own; it adds
// the bytes it hashed to hashed.
func hashLoop(stop *atomic.Bool, hashed *atomic.Int64) {
	buf := make([]byte, 64<<10)
	for !stop.Load() {
		buf[0] = sha256.Sum256(buf)[0]
		hashed.Add(int64(len(buf)))
	}
}

// promptLoad is a cell of one of PromptLoads.
func (s *suite) promptLoad(load string, procs int, c Criterion) (*Record, error) {
	rec := &Record{Kind: kindPrompt, Kernel: load, Procs: procs, Criterion: c.String()}
	var stop atomic.Bool
	var in []byte
	if load == "alloc" {
		in = promptAllocInput()
	}
	var work batchWork
	var fibs, mib float64
	err := s.promptCell(rec, procs, c, func(rt *runtime.Runtime, lo fairness.Priority, srv *interactive.Server, from int64) error {
		var hs []*thread.Handle[error]
		var wg sync.WaitGroup
		if load == "alloc" {
			for range procs {
				hs = append(hs, thread.Go(rt, lo, func(*thread.Ctx) error { allocLoop(&stop, in); return nil }))
			}
		} else {
			rec.Size = s.cfg.promptBatchFib()
			fib := kernels.NewFib(rec.Size, 1)
			hs = append(hs, thread.Go(rt, lo, func(c *thread.Ctx) error {
				// At least one pass, so that the check has a result even
				// when the thread starts only after the measured span.
				for done := false; !done; {
					fib.Forked(c)
					work.fibs.Add(1)
					done = stop.Load()
				}
				return fib.Check()
			}))
			for range promptGoroutines(load) {
				wg.Go(func() { hashLoop(&stop, &work.hashed) })
			}
		}
		fibs, mib = work.measure(rec, func() { s.cfg.waitEnough(srv, from) })
		stop.Store(true)
		wg.Wait()
		var errs []error
		for _, h := range hs {
			e, werr := h.Wait()
			errs = append(errs, e, werr)
		}
		return closeAll(errs...)
	})
	if rec.PromptSummary != nil {
		rec.PromptSummary.BatchRate, rec.PromptSummary.HashRate = fibs, mib
	}
	return rec, err
}

// cellLoad runs a cell's load on rt at priority lo (see promptCell).
type cellLoad func(rt *runtime.Runtime, lo fairness.Priority, srv *interactive.Server, from int64) error

// promptCell runs one cell: a runtime of procs workers under c, the echo
// at high priority, a sink at medium if c gives medium a share, and load,
// which must record its measured spans in rec and return once the echo has
// answered enough requests since from (Server.Echoed). It fills rec's echo,
// collector and summary.
func (s *suite) promptCell(rec *Record, procs int, c Criterion, load cellLoad) error {
	tr, err := startCellTrace(s.cfg.PromptTrace, rec)
	if err != nil {
		return err
	}
	p, rt, echo, err := s.echoOnConns(procs, c, s.cfg.promptScript(), promptConns)
	if err != nil {
		return closeAll(err, tr.stop(rec))
	}
	var snk *kernels.Sink
	if c[1] > 0 {
		snk = kernels.StartSink(rt, p.mid)
	}
	gc := startCollector()
	err = load(rt, p.lo, echo.srv, echo.srv.Echoed())
	rec.Collector = gc.stop()
	if s.prompt.allocRate == nil {
		s.prompt.allocRate = make(map[loadAt]float64)
	}
	at := loadAt{rec.Kernel, procs}
	s.prompt.allocRate[at] = max(s.prompt.allocRate[at], rec.Collector.AllocPerSecond)
	err = closeAll(err, snk.Close(), closeEcho(nil, echo, rec), rt.Close())
	s.promptSummary(rec)
	return closeAll(err, tr.stop(rec))
}

// promptSummary fills rec.PromptSummary from its measured requests.
func (s *suite) promptSummary(rec *Record) {
	l := echoLatency(rec)
	sum := &PromptSummary{Load: rec.Kernel, Requests: l.N, Lost: l.Lost, P50: inMs(l.P50), P99: inMs(l.P99), P999: inMs(l.P999), Max: inMs(l.Max)}
	if rec.Kind == kindPrompt {
		sum.IdleP99 = s.prompt.idleP99[rec.Procs]
		if sum.IdleP99 > 0 {
			sum.Ratio = sum.P99 / sum.IdleP99
		}
	}
	if p := rec.EchoParts; p != nil {
		sum.DeliveryP99, sum.FairlyP99, sum.ReplyP99 = inMs(p.DeliveryP99), inMs(p.FairlyP99), inMs(p.ReplyP99)
	}
	if gc := rec.Collector; gc != nil {
		sum.GCCycles, sum.GCMaxPause, sum.GOMAXPROCSChanges = gc.Cycles, inMs(gc.LongestPause), gc.OtherPauses
		sum.AllocRate = gc.AllocPerSecond / (1 << 20)
	}
	rec.PromptSummary = sum
}

// promptState is what the experiment's cells share.
type promptState struct {
	inst    kernels.Instance // the current kernel's input, at its size
	kernel  string
	size    int
	idleP99 map[int]float64 // by procs
	// allocRate is the most bytes a second that a fairly cell of a load
	// at a P allocated (Collector.AllocPerSecond): what the floor-alloc
	// control of that load and P allocates at least.
	allocRate map[loadAt]float64
}

// loadAt names a load at a processor count.
type loadAt struct {
	load  string
	procs int
}

// promptSections are the experiment's tables: every cell, and, when the
// controls ran, the cells beside them and the goal met by fairly and by
// the floor.
func promptSections(res *Results) []Section {
	out := []Section{promptTable(res)}
	if v := promptVersusTable(res); v != nil {
		out = append(out, *v)
	}
	if g := promptGoalTable(res); g != nil {
		out = append(out, *g)
	}
	if w := promptBatchTable(res); w != nil {
		out = append(out, *w)
	}
	return out
}

// promptBatchTable sets what each batch load got done beside the echo's
// p99, fairly's cells first and then the controls of the same load and P:
// a control that answers sooner may do so by starving its batch. It is nil
// when no batch load ran.
func promptBatchTable(res *Results) *Section {
	var keys []loadAt
	rows := map[loadAt][]*Record{}
	for _, rec := range res.Records {
		if sum := rec.PromptSummary; sum != nil && strings.HasPrefix(rec.Kernel, "batch") && rec.Kind != kindPromptIdle {
			k := loadAt{rec.Kernel, rec.Procs}
			if rows[k] == nil {
				keys = append(keys, k)
			}
			rows[k] = append(rows[k], rec)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	// The batch load's rate at each P under each criterion or control: the
	// batch alone beside the echo, what the others' rows are set against
	// (fairly's forks at every call make it slower than the controls'
	// sequential code, so rates compare within a system, not across).
	type at struct {
		procs int
		crit  string
	}
	alone := map[at]float64{}
	for k, recs := range rows {
		if k.load == "batch" {
			for _, rec := range recs {
				alone[at{k.procs, promptCriterion(rec)}] = rec.PromptSummary.BatchRate
			}
		}
	}
	// Fairly's cells, then the floor, then plain Go.
	rank := func(r *Record) int {
		switch r.PromptSummary.Control {
		case controlFloor, controlFloorAlloc:
			return 1
		case controlPlain:
			return 2
		}
		return 0
	}
	t := table{head: []string{"load", "P", "criterion", "echo p99 (ms)", "batch fib(n)/s", "÷ batch alone", "hashing MiB/s"}}
	for _, k := range keys {
		slices.SortStableFunc(rows[k], func(a, b *Record) int { return cmp.Compare(rank(a), rank(b)) })
		for _, rec := range rows[k] {
			sum := rec.PromptSummary
			crit, share, hash := promptCriterion(rec), "—", "—"
			if a := alone[at{rec.Procs, crit}]; a > 0 {
				share = fmt.Sprintf("%.2f", sum.BatchRate/a)
			}
			if promptGoroutines(rec.Kernel) > 0 {
				hash = fmt.Sprintf("%.0f", sum.HashRate)
			}
			t.add(rec.Kernel, fmt.Sprint(rec.Procs), crit, msOf(sum.P99), fmt.Sprintf("%.1f", sum.BatchRate), share, hash)
		}
	}
	return &Section{
		Title: "Prompt: what the batch got done",
		Text: "What each batch load computed while the echo answered, over the measured span: fib(n) a second by the batch " +
			"(one thread forking on fairly's workers in fairly's cells, P goroutines computing it sequentially in the controls, on idle-class threads in the floor's) " +
			"and MiB a second hashed by the ordinary goroutines of batch+1go and batch+2go. " +
			"÷ batch alone sets the batch's rate against the batch load's at the same P under the same criterion or control: what the ordinary goroutines left it. " +
			"Fairly's batch forks at every call (thread.Fork2), slower than the controls' sequential code, so rates compare down a system's rows, not across systems. " +
			"The batch's share under a criterion is what fairly keeps; the floor's batch gets only the processor time that nothing else wants.",
		Table: t.String(),
	}
}

// promptCriterion is a prompt record's criterion column: the criterion of
// a fairly cell, the control ("plain Go", "floor Go") of a control's, a
// dash for the idle echo.
func promptCriterion(rec *Record) string {
	switch rec.Kind {
	case kindPromptIdle:
		return "—"
	case kindPromptControl:
		return rec.PromptSummary.Control + " Go"
	}
	return rec.Criterion
}

// promptTable is the experiment's table: one row per cell.
func promptTable(res *Results) Section {
	t := table{head: []string{"load", "P", "criterion", "requests", "p50 (ms)", "p99 (ms)", "p99.9 (ms)", "max (ms)", "idle p99 (ms)", "p99 ÷ idle",
		"p99 delivery / fairly / reply (ms)", "GC cycles", "longest GC pause (ms)", "GOMAXPROCS changes", "requests before / measured / after", "allocated (MiB/s)"}}
	for _, rec := range res.Records {
		sum := rec.PromptSummary
		if sum == nil || (rec.Kind != kindPrompt && rec.Kind != kindPromptIdle && rec.Kind != kindPromptControl) {
			continue
		}
		ratio, idle := "—", "—"
		if sum.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", sum.Ratio)
		}
		if sum.IdleP99 > 0 {
			idle = msOf(sum.IdleP99)
		}
		ph := rec.PhaseRequests
		t.add(rec.Kernel, fmt.Sprint(rec.Procs), promptCriterion(rec), fmt.Sprint(sum.Requests), msOf(sum.P50), msOf(sum.P99), msOf(sum.P999), msOf(sum.Max), idle, ratio,
			fmt.Sprintf("%s / %s / %s", msOf(sum.DeliveryP99), msOf(sum.FairlyP99), msOf(sum.ReplyP99)),
			fmt.Sprint(sum.GCCycles), msOf(sum.GCMaxPause), fmt.Sprint(sum.GOMAXPROCSChanges),
			fmt.Sprintf("%d / %d / %d", ph[phaseBefore], ph[phaseMeasured], ph[phaseAfter]+ph[phaseBetween]), fmt.Sprintf("%.0f", sum.AllocRate))
	}
	return Section{
		Title: "Prompt: the echo beside every load",
		Text: fmt.Sprintf("A network echo at high priority, driven at %g requests/s over %d connections, beside one load per cell at low priority: every kernel at its default size "+
			"(repeated), alloc (one thread per worker cloning and hashing %d MiB per call, a library call with no preemption point that allocates), "+
			"batch (thread.Fork2's fib(%s) repeated in one thread) and batch+1go, batch+2go (the batch and one or two ordinary goroutines computing SHA-256 outside fairly). "+
			"A time sink runs at medium priority where the criterion gives medium a share. Idle is the echo alone; p99 ÷ idle divides by the idle p99 at the same P in this run. "+
			"Only requests sent while the load ran count (the last column: requests sent before the load started, while it ran, and after; no check of a result runs meanwhile). "+
			"The parts are each part's p99: delivery (the driver's write to the server's read), fairly (the read to the echo's thread running again), reply (the write to the driver's read). "+
			"GC, GOMAXPROCS and allocation columns are read from runtime/metrics over the measured span; GOMAXPROCS changes are the stop-the-world pauses other than the collector's; "+
			"allocated is what the whole process allocated a second, which sets how often Go collects. "+
			"Rows of criterion plain Go, floor Go and floor-alloc Go are the controls, without fairly (next tables). "+
			"Goals: p99 ≤ 1 ms and ≤ 2× idle, fairly's part ≤ 0.2 ms.", res.PromptRate, promptConns, promptAllocMiB, batchFib(res)),
		Table: t.String(),
		Chart: "prompt.png",
		draw:  func(path string) error { return drawPrompt(res, path) },
	}
}

// batchFib is the n of the batch load's fib in res, as text.
func batchFib(res *Results) string {
	for _, rec := range res.Records {
		if rec.Kind == kindPrompt && strings.HasPrefix(rec.Kernel, "batch") {
			return fmt.Sprint(rec.Size)
		}
	}
	return "n"
}

// drawPrompt plots each cell's p99 on a logarithmic axis, one series per
// criterion and P, the idle echo's as its own and the floor control's as
// one per P, with the 1 ms goal.
func drawPrompt(res *Results, path string) error {
	var loads []string
	for _, rec := range res.Records {
		if rec.Kind == kindPrompt && !slices.Contains(loads, rec.Kernel) {
			loads = append(loads, rec.Kernel)
		}
	}
	names := append([]string{"idle"}, loads...)
	p := logPlot(fmt.Sprintf("Prompt: echo p99 beside each load\npoint: p99, bar: p50 to p99.9, of ≥ %d requests at %g/s", res.PromptRequests, res.PromptRate),
		"load at low priority", "echo response time (ms, log scale)")
	type key struct {
		procs int
		crit  string
	}
	var keys []key
	for _, rec := range res.Records {
		if rec.Kind == kindPrompt && !slices.Contains(keys, key{rec.Procs, rec.Criterion}) {
			keys = append(keys, key{rec.Procs, rec.Criterion})
		}
	}
	var floors []int // the procs the floor ran at
	for _, rec := range res.Records {
		if s := rec.PromptSummary; rec.Kind == kindPromptControl && s != nil && s.Control == controlFloor && !slices.Contains(floors, rec.Procs) {
			floors = append(floors, rec.Procs)
		}
	}
	ys := []float64{1}
	series := len(keys) + 1 + len(floors)
	step := 0.7 / float64(series)
	offset := func(i int) float64 { return step * (float64(i) - float64(series-1)/2) }
	var idle spreadPoints
	for _, rec := range res.Records {
		if s := rec.PromptSummary; rec.Kind == kindPromptIdle && s != nil && s.Requests > 0 {
			idle.add(offset(0), lg(s.P99), lg(s.P50), lg(s.P999))
			ys = append(ys, s.P50, s.P999)
		}
	}
	if err := idle.draw(p, 0, "echo alone"); err != nil {
		return err
	}
	for i, k := range keys {
		var pts spreadPoints
		for _, rec := range res.Records {
			if s := rec.PromptSummary; rec.Kind == kindPrompt && s != nil && s.Requests > 0 && rec.Procs == k.procs && rec.Criterion == k.crit {
				pts.add(float64(slices.Index(names, rec.Kernel))+offset(i+1), lg(s.P99), lg(s.P50), lg(s.P999))
				ys = append(ys, s.P50, s.P999)
			}
		}
		if err := pts.draw(p, i+1, fmt.Sprintf("criterion %s, P=%d", k.crit, k.procs)); err != nil {
			return err
		}
	}
	for i, procs := range floors {
		var pts spreadPoints
		for _, rec := range res.Records {
			if s := rec.PromptSummary; rec.Kind == kindPromptControl && s != nil && s.Requests > 0 && s.Control == controlFloor && rec.Procs == procs {
				if x := slices.Index(names, rec.Kernel); x >= 0 {
					pts.add(float64(x)+offset(1+len(keys)+i), lg(s.P99), lg(s.P50), lg(s.P999))
					ys = append(ys, s.P50, s.P999)
				}
			}
		}
		if err := pts.draw(p, 1+len(keys)+i, fmt.Sprintf("plain Go tuned by hand (floor), P=%d", procs)); err != nil {
			return err
		}
	}
	return saveByName(p, names, ys, vg.Points(max(500, float64(70*len(names)))), path)
}
