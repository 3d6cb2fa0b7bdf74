package harness

import (
	"cmp"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Kinds of Record.
const (
	kindSeq        = "seq"        // sequential baseline
	kindGoroutines = "goroutines" // plain-goroutine version
	kindAlone      = "alone"      // kernel at low priority, criterion 0-0-100, nothing else running
	kindLoaded     = "loaded"     // kernel at low, sink at medium, network echo at high
	kindWTA        = "wta"        // kernel at low, network echo at high, criterion 100-0-0
	kindWTAIdle    = "wta-idle"   // table3's echo alone on the runtime: its floor
	kindFib        = "table5"     // fib with a network echo, fairly or goroutines
	kindCollector  = "collector"  // table5's fine-grained fairly run, forking with Spawn or Fork2
	kindShare      = "fig9"       // fib with a sink and a terminal echo, varying the echo's share
)

// Grains of table5. table2's fine-grained runs (kernels.FineInstance) are
// records of kinds alone and goroutines with Grain grainFine; its other
// records have no grain.
const (
	grainIdle   = "idle"
	grainFine   = "fine"
	grainCoarse = "coarse"
	// grainSpawn and grainFork2 are the two fairly versions of table5's fine
	// grain that the collector experiment sets side by side: a thread.Spawn
	// at every call (two allocations a fork) and a thread.Fork2 at every
	// call (none; table5's fine grain on fairly).
	grainSpawn = "fine-spawn"
	grainFork2 = "fine-fork2"
	// coarseCutoff is table5's sequential cutoff at coarse grain.
	coarseCutoff = 12
)

// Systems of table5 and stall.
const (
	sysFairly     = "fairly"
	sysGoroutines = "goroutines"
	// sysTuned is plain Go tuned by hand for the stall experiment: each
	// library call's goroutine locked to its OS thread and that thread
	// demoted to SCHED_IDLE, one Go P more than the calls (Linux only).
	sysTuned = "goroutines, tuned"
)

// Record holds the raw measurements of one setting.
type Record struct {
	Kind      string `json:"kind"`
	Kernel    string `json:"kernel,omitempty"`
	Size      int    `json:"size,omitempty"`
	Procs     int    `json:"procs,omitempty"`
	Criterion string `json:"criterion,omitempty"`
	// System is "fairly" or "goroutines" in table5; Grain is its grain,
	// or "fine" for the fine-grained versions of table2.
	System string `json:"system,omitempty"`
	Grain  string `json:"grain,omitempty"`
	// Skipped says why a setting did not run, if it did not.
	Skipped string `json:"skipped,omitempty"`
	// Share is the interactive share of fig9, in percent.
	Share float64 `json:"share,omitempty"`
	// Times are the kernel's run times.
	Times []time.Duration `json:"times_ns,omitempty"`
	// SeqTimes are sequential runs paired with Times, in the fairly runs
	// alone when table2 runs: SeqTimes[i] ran right before Times[i], on the
	// same input in the same step. SeqRatios are Times[i]/SeqTimes[i], T_P
	// over T_seq a pair at a time, and SeqRatio is their median. The
	// machine has stretches in which its cores run slower; the two runs of
	// a pair, milliseconds apart, fall in the same one far more often than
	// a run and the sequential step, which ran seconds earlier.
	SeqTimes  []time.Duration `json:"seq_times_ns,omitempty"`
	SeqRatios []float64       `json:"seq_ratios,omitempty"`
	SeqRatio  float64         `json:"seq_ratio,omitempty"`
	// Echo is what the driver measured, if one ran.
	Echo *driver.Result `json:"echo,omitempty"`
	// EchoParts splits the echo's response times by where they were spent.
	EchoParts *EchoParts `json:"echo_parts,omitempty"`
	// Measured are the spans in which the load ran and the harness did
	// nothing else; only requests sent in them count in the tables
	// (phases.go). PhaseRequests counts the requests sent in each phase:
	// measured, before, between and after.
	Measured      []Span         `json:"measured,omitempty"`
	PhaseRequests map[string]int `json:"phase_requests,omitempty"`
	// CPUShares are the fractions of the processor time the runtime spent
	// at each priority over a run of table1 or table3 (runtime.Stats): the
	// share the criterion gave the kernel, beside the stretch it caused.
	CPUShares *CPUShares `json:"cpu_shares,omitempty"`
	// Collector is what the collector did during a table5 run.
	Collector *Collector `json:"collector,omitempty"`
	// Throughput is the http experiment's batch: fib computed per second.
	Throughput float64 `json:"throughput,omitempty"`
	// PromptSummary is what the prompt experiment measured.
	*PromptSummary
	// SimRecord and SimCalibration hold what the sim experiment measured.
	*SimRecord
	*SimCalibration
}

// Results are the records of a suite run and the configuration that made
// them.
type Results struct {
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Procs    []int         `json:"procs"`
	Criteria []Criterion   `json:"criteria"`
	Shares   []float64     `json:"shares"`
	Reps     int           `json:"reps"`
	EchoRate float64       `json:"echo_rate"`
	EchoFor  time.Duration `json:"echo_for_ns"`
	SimRate  float64       `json:"sim_rate,omitempty"`
	SimSeed  uint64        `json:"sim_seed,omitempty"`
	SimWork  time.Duration `json:"sim_work_ns,omitempty"`
	StallMiB int           `json:"stall_mib,omitempty"`
	HTTP     *HTTPConfig   `json:"http,omitempty"`
	// PromptRate and PromptRequests are the prompt experiment's echo rate
	// and requests per cell.
	PromptRate     float64 `json:"prompt_rate,omitempty"`
	PromptRequests int     `json:"prompt_requests,omitempty"`
	// Kernels are the kernel names in the order of the tables.
	Kernels     []string  `json:"kernels"`
	Experiments []string  `json:"experiments"`
	Records     []*Record `json:"records"`
}

// simRate, simSeed and simWork are the sim experiment's settings (results
// written before one was recorded ran at its default).
func (r *Results) simRate() float64       { return cmp.Or(r.SimRate, defaultSimRate) }
func (r *Results) simSeed() uint64        { return cmp.Or(r.SimSeed, DefaultSimSeed) }
func (r *Results) simWork() time.Duration { return cmp.Or(r.SimWork, DefaultSimWork) }

// find returns the record matching every non-zero field of want, and its
// grain, or nil.
func (r *Results) find(want Record) *Record {
	for _, rec := range r.Records {
		if rec.Kind == want.Kind && (want.Kernel == "" || rec.Kernel == want.Kernel) &&
			(want.Procs == 0 || rec.Procs == want.Procs) && (want.Criterion == "" || rec.Criterion == want.Criterion) &&
			(want.System == "" || rec.System == want.System) && rec.Grain == want.Grain &&
			(want.Share == 0 || rec.Share == want.Share) {
			return rec
		}
	}
	return nil
}

// step is one unit of the suite, the grain of the progress report.
type step struct {
	name string
	run  func() (*Record, error)
	// baseline marks a plain-goroutine run of table2, table5 or stall; plan
	// puts them after every other step (see there).
	baseline bool
	// stall marks a step of the stall experiment, which uses its input.
	stall bool
}

// suite runs the steps of one Config.
type suite struct {
	cfg       *Config
	instances map[string]kernels.Instance // reused across steps: inputs are costly to build
	tmp       string
	stallIn   map[string]any // the stall experiment's current input
	prompt    promptState
}

// Run runs the experiments of cfg and returns their raw results; Report
// turns them into tables and charts.
func Run(cfg Config) (*Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "fairbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s := &suite{cfg: &cfg, instances: make(map[string]kernels.Instance), tmp: tmp}
	res := &Results{
		Started: time.Now(), Procs: cfg.Procs, Criteria: cfg.Criteria, Shares: cfg.Shares, Reps: cfg.Reps,
		EchoRate: cfg.EchoRate, EchoFor: cfg.EchoFor, Experiments: cfg.Experiments, StallMiB: cfg.stallMiB(), SimRate: cfg.simRate(), SimSeed: cfg.simSeed(), SimWork: cfg.simWork(),
		HTTP: cfg.httpResults(),
	}
	if cfg.needs("prompt") {
		res.PromptRate, res.PromptRequests = cfg.promptRate(), cfg.promptRequests()
	}
	for _, k := range cfg.Kernels {
		res.Kernels = append(res.Kernels, k.Name)
	}
	steps := s.plan()
	for i, st := range steps {
		if cfg.Progress != nil {
			cfg.Progress(i, len(steps), st.name)
		}
		// Every step starts from a collected heap, as a Go benchmark does,
		// and only a stall step keeps the stall input (tens of MiB) alive:
		// a large live heap lengthens every collection, and so the tail of
		// the echoes measured after it.
		if !st.stall {
			s.stallIn = nil
		}
		goruntime.GC()
		rec, err := st.run()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		res.Records = append(res.Records, rec)
	}
	if cfg.Progress != nil {
		cfg.Progress(len(steps), len(steps), "")
	}
	res.Elapsed = time.Since(res.Started)
	return res, nil
}

// plan lists the steps the chosen experiments need.
func (s *suite) plan() []step {
	cfg := s.cfg
	var steps []step
	add := func(run func() (*Record, error), format string, a ...any) {
		steps = append(steps, step{name: fmt.Sprintf(format, a...), run: run})
	}
	addBaseline := func(run func() (*Record, error), format string, a ...any) {
		steps = append(steps, step{name: fmt.Sprintf(format, a...), run: run, baseline: true})
	}
	for _, k := range cfg.Kernels {
		if cfg.needs("table2", "table3", "table4") {
			add(func() (*Record, error) { return s.seq(k) }, "%s sequential", k.Name)
		}
		for _, p := range cfg.Procs {
			if cfg.needs("table1", "table2", "table4", "fig8") {
				add(func() (*Record, error) { return s.alone(k, p) }, "%s alone P=%d", k.Name, p)
			}
			if cfg.needs("table2") {
				addBaseline(func() (*Record, error) { return s.goroutines(k, p) }, "%s goroutines P=%d", k.Name, p)
			}
			if cfg.needs("table2") && k.FineOf == "" {
				add(func() (*Record, error) { return s.fine(k, p) }, "%s fine P=%d", k.Name, p)
				if !k.GoroutinesFine {
					addBaseline(func() (*Record, error) { return s.fineGoroutines(k, p) }, "%s fine goroutines P=%d", k.Name, p)
				}
			}
			if cfg.needs("table1", "table4", "fig8") {
				for _, c := range cfg.Criteria {
					add(func() (*Record, error) { return s.busy(kindLoaded, k, p, c, true) }, "%s %v P=%d", k.Name, c, p)
				}
			}
			if cfg.needs("table3") {
				add(func() (*Record, error) {
					return s.busy(kindWTA, k, p, Criterion{100, 0, 0}, false)
				}, "%s winner-take-all P=%d", k.Name, p)
			}
		}
	}
	if cfg.needs("table3") {
		for _, p := range cfg.Procs {
			add(func() (*Record, error) { return s.wtaIdle(p) }, "winner-take-all echo alone P=%d", p)
		}
	}
	if cfg.needs("table5") {
		for _, p := range cfg.Procs {
			for _, g := range []string{grainIdle, grainFine, grainCoarse} {
				add(func() (*Record, error) { return s.fibEcho(kindFib, g, sysFairly, p) }, "fib+echo %s %s P=%d", g, sysFairly, p)
				addBaseline(func() (*Record, error) { return s.fibEcho(kindFib, g, sysGoroutines, p) }, "fib+echo %s %s P=%d", g, sysGoroutines, p)
			}
		}
	}
	if cfg.needs("collector") {
		for _, p := range cfg.Procs {
			for _, g := range []string{grainSpawn, grainFork2} {
				add(func() (*Record, error) { return s.fibEcho(kindCollector, g, sysFairly, p) }, "collector: fib+echo %s P=%d", g, p)
			}
		}
	}
	if cfg.needs("stall") {
		for _, p := range cfg.Procs {
			for _, l := range stallLoads {
				steps = append(steps, step{name: fmt.Sprintf("stall %s fairly P=%d", l.name, p), stall: true,
					run: func() (*Record, error) { return s.stall(l, sysFairly, p) }})
			}
			l := stallLoadNamed("sort")
			steps = append(steps, step{name: fmt.Sprintf("stall %s goroutines P=%d", l.name, p), stall: true, baseline: true,
				run: func() (*Record, error) { return s.stall(l, sysGoroutines, p) }})
			if canIdleThreads {
				for _, l := range stallLoads[1:] {
					steps = append(steps, step{name: fmt.Sprintf("stall %s tuned goroutines P=%d", l.name, p), stall: true, baseline: true,
						run: func() (*Record, error) { return s.stall(l, sysTuned, p) }})
				}
			}
		}
	}
	if cfg.needs("prompt") {
		steps = append(steps, s.promptSteps()...)
	}
	if cfg.needs("http") {
		steps = append(steps, s.httpSteps()...)
	}
	if cfg.needs("sim") {
		s.simSteps(add)
	}
	if cfg.needs("fig9") {
		for _, p := range cfg.Procs {
			for _, share := range cfg.Shares {
				add(func() (*Record, error) { return s.share(share, p) }, "terminal echo at %g%% P=%d", share, p)
			}
		}
	}
	// The plain-goroutine baselines run last. Go never frees the record of a
	// goroutine, so a baseline that forks a goroutine per call (fine-grained
	// fib: hundreds of thousands at once) leaves every later collection in
	// the process more to walk, and fairly's runs measured after it answered
	// the echo slower (Table 5, fine grain, P = 2: its p99 about doubled
	// after table2's baselines).
	slices.SortStableFunc(steps, func(a, b step) int {
		switch {
		case a.baseline == b.baseline:
			return 0
		case b.baseline:
			return -1
		}
		return 1
	})
	return steps
}

func (s *suite) instance(k kernels.Kernel) kernels.Instance {
	inst, ok := s.instances[k.Name]
	if !ok {
		inst = k.New(s.cfg.size(k))
		s.instances[k.Name] = inst
	}
	return inst
}

func (s *suite) record(kind string, k kernels.Kernel, procs int) *Record {
	return &Record{Kind: kind, Kernel: k.Name, Size: s.cfg.size(k), Procs: procs}
}

func (s *suite) seq(k kernels.Kernel) (*Record, error) {
	inst, rec := s.instance(k), s.record(kindSeq, k, 0)
	var err error
	rec.Times, err = repeat(s.cfg.Reps, func() (time.Duration, error) { return seqRun(inst) })
	return rec, err
}

func (s *suite) goroutines(k kernels.Kernel, procs int) (*Record, error) {
	inst := s.instance(k)
	return s.goroutinesTimes(s.record(kindGoroutines, k, procs), inst, inst.Goroutines)
}

// goroutinesTimes fills rec with the times of version, a plain-goroutine
// version of inst, at GOMAXPROCS = rec.Procs.
func (s *suite) goroutinesTimes(rec *Record, inst kernels.Instance, version func()) (*Record, error) {
	var err error
	rec.Times, err = withProcs(rec.Procs, func() ([]time.Duration, error) {
		return repeat(s.cfg.Reps, func() (time.Duration, error) {
			return timed(inst, func() error { version(); return nil })
		})
	})
	return rec, err
}

// alone runs the kernel at low priority with every share and nothing else
// running: the baseline of stretch, and fairly's time in table2.
func (s *suite) alone(k kernels.Kernel, procs int) (*Record, error) {
	inst := s.instance(k)
	return s.aloneRun(s.record(kindAlone, k, procs), inst, func(rt *runtime.Runtime, p fairness.Priority) (time.Duration, error) {
		return fairlyRun(rt, p, inst)
	})
}

// fine is alone for the fine-grained fairly version, in table2.
func (s *suite) fine(k kernels.Kernel, procs int) (*Record, error) {
	rec := s.record(kindAlone, k, procs)
	rec.Grain = grainFine
	inst, ok := s.instance(k).(kernels.FineInstance)
	if !ok {
		rec.Skipped = "no fine-grained version"
		return rec, nil
	}
	return s.aloneRun(rec, inst, func(rt *runtime.Runtime, p fairness.Priority) (time.Duration, error) {
		return fineRun(rt, p, inst)
	})
}

// aloneRun fills rec with the times of run, a fairly version of inst, at
// low priority, on a runtime of rec.Procs workers that gives that priority
// every share. When table2 runs, a sequential run of inst precedes each
// repetition, and rec holds the pairs and their ratios: Table 2's T_P/T_seq.
func (s *suite) aloneRun(rec *Record, inst kernels.Instance, run func(rt *runtime.Runtime, p fairness.Priority) (time.Duration, error)) (*Record, error) {
	c := Criterion{0, 0, 100}
	rec.Criterion = c.String()
	p := newPrios()
	rt, err := p.runtime(rec.Procs, c)
	if err != nil {
		return nil, err
	}
	fairly := func() (time.Duration, error) { return run(rt, p.lo) }
	if s.cfg.needs("table2") {
		rec.Times, rec.SeqTimes, err = repeatPaired(s.cfg.Reps, func() (time.Duration, error) { return seqRun(inst) }, fairly)
		rec.pairRatios()
	} else {
		rec.Times, err = repeat(s.cfg.Reps, fairly)
	}
	return rec, closeAll(err, rt.Close())
}

// fineGoroutines is goroutines for the fine-grained version, in table2.
// It is skipped for kernels where it starts a goroutine per element
// (kernels.Kernel.FineGoroutinesCost): millions a run, many times the
// sequential time, too long for the suite.
func (s *suite) fineGoroutines(k kernels.Kernel, procs int) (*Record, error) {
	rec := s.record(kindGoroutines, k, procs)
	rec.Grain = grainFine
	inst, ok := s.instance(k).(kernels.FineInstance)
	switch {
	case !ok:
		rec.Skipped = "no fine-grained version"
		return rec, nil
	case k.FineGoroutinesCost != "":
		rec.Skipped = k.FineGoroutinesCost
		return rec, nil
	}
	return s.goroutinesTimes(rec, inst, inst.FineGoroutines)
}

// busy runs the kernel at low priority under criterion c while a network
// echo serves the driver at high priority, with a time sink at medium
// priority if withSink is set.
func (s *suite) busy(kind string, k kernels.Kernel, procs int, c Criterion, withSink bool) (*Record, error) {
	inst, rec := s.instance(k), s.record(kind, k, procs)
	rec.Criterion = c.String()
	p, rt, echo, err := s.echoOn(procs, c, s.cfg.openScript())
	if err != nil {
		return nil, err
	}
	var snk *kernels.Sink
	if withSink {
		snk = kernels.StartSink(rt, p.mid)
	}
	rec.Times, err = repeat(s.cfg.Reps, func() (time.Duration, error) {
		return s.timedBeside(echo, rec, inst, func() error { return kernels.RunVersion(rt, p.lo, inst.Fairly) })
	})
	rec.CPUShares = p.shares(rt.Stats())
	err = closeEcho(err, echo, rec)
	return rec, closeAll(err, snk.Close(), rt.Close())
}

// wtaIdle is table3's floor: its network echo alone on a runtime of procs
// workers, replaying the fixed trace, so that each run shows what this
// machine gives an echo with nothing else running.
func (s *suite) wtaIdle(procs int) (*Record, error) {
	rec := &Record{Kind: kindWTAIdle, Kernel: "idle", Procs: procs, Criterion: Criterion{100, 0, 0}.String()}
	_, rt, echo, err := s.echoOn(procs, Criterion{100, 0, 0}, s.cfg.fixedScript())
	if err != nil {
		return nil, err
	}
	<-echo.drv.done
	return rec, closeAll(closeEcho(nil, echo, rec), rt.Close())
}

// echoOn starts a runtime of procs workers under criterion c and a network
// echo on it, at the high priority, with a driver replaying script.
func (s *suite) echoOn(procs int, c Criterion, script string) (prios, *runtime.Runtime, *netEcho, error) {
	return s.echoOnConns(procs, c, script, 1)
}

// echoOnConns is echoOn with the driver's requests dealt to conns
// connections in turn.
func (s *suite) echoOnConns(procs int, c Criterion, script string, conns int) (prios, *runtime.Runtime, *netEcho, error) {
	p := newPrios()
	rt, err := p.runtime(procs, c)
	if err != nil {
		return p, nil, nil, err
	}
	echo, err := s.cfg.startNetEchoConns(func(ln net.Listener) *interactive.Server { return interactive.ServeNet(rt, p.hi, ln) }, script, conns)
	if err != nil {
		return p, nil, nil, closeAll(err, rt.Close())
	}
	return p, rt, echo, nil
}

// CPUShares are the shares of processor time of the three priorities.
type CPUShares struct {
	High   float64 `json:"high"`
	Medium float64 `json:"medium"`
	Low    float64 `json:"low"`
}

// fibEcho is a setting of table5: a network echo replaying a fixed trace
// while fib at grain g repeats (nothing runs at idle grain), on fairly
// with criterion 50-50 or on plain goroutines.
func (s *suite) fibEcho(kind, g, sys string, procs int) (*Record, error) {
	n := s.cfg.fibSize()
	rec := &Record{Kind: kind, Kernel: "fib", Size: n, Procs: procs, System: sys, Grain: g}
	var inst *kernels.Fib
	switch g {
	case grainFine, grainSpawn, grainFork2:
		inst = kernels.NewFib(n, 1)
	case grainCoarse:
		inst = kernels.NewFib(n, coarseCutoff)
	}
	compute := func(echo *netEcho, run func() error) error {
		var err error
		if inst != nil {
			gc := startCollector()
			rec.Times, err = untilChecked(echo.drv.done, rec, inst, run)
			rec.Collector = gc.stop()
		}
		if err == nil {
			<-echo.drv.done // the trace has a fixed length: let it end
		}
		return closeEcho(err, echo, rec)
	}
	if sys == sysGoroutines {
		_, err := withProcs(procs, func() (struct{}, error) {
			echo, err := s.cfg.startNetEcho(interactive.ServeNetGoroutines, s.cfg.fixedScript())
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, compute(echo, func() error { inst.Goroutines(); return nil })
		})
		return rec, err
	}
	rec.Criterion = "50-50"
	p, rt, echo, err := s.echoOn(procs, Criterion{50, 0, 50}, s.cfg.fixedScript())
	if err != nil {
		return nil, err
	}
	version := inst.Forked // Fork2, fairly's fork for such code
	if g == grainSpawn {   // the collector experiment's Spawn setting
		version = inst.Fairly
	}
	err = compute(echo, func() error { return kernels.RunVersion(rt, p.lo, version) })
	return rec, closeAll(err, rt.Close())
}

// share is a setting of fig9: a terminal echo at high priority with the
// given share, talking to the driver over pipes, while a sink runs at
// medium and fib repeats at low, criterion share-(50-share)-50.
func (s *suite) share(share float64, procs int) (*Record, error) {
	n := s.cfg.fibSize()
	c := Criterion{share, 50 - share, 50}
	rec := &Record{Kind: kindShare, Kernel: "fib", Size: n, Procs: procs, Share: share, Criterion: c.String()}
	inst := kernels.NewFib(n, 1)
	p := newPrios()
	rt, err := p.runtime(procs, c)
	if err != nil {
		return nil, err
	}
	drv, requests, echoes, err := s.cfg.startStreamDriver(s.tmp, s.cfg.fixedScript())
	if err != nil {
		return nil, closeAll(err, rt.Close())
	}
	snk := kernels.StartSink(rt, p.mid)
	term := thread.Go(rt, p.hi, func(c *thread.Ctx) error { return interactive.TermEcho(c, requests, echoes) })
	rec.Times, err = untilChecked(drv.done, rec, inst, func() error { return kernels.RunVersion(rt, p.lo, inst.Fairly) })
	var ferr error
	rec.Echo, ferr = drv.finish()
	rec.countPhases()
	echoErr, werr := term.Wait() // the driver is gone, so its requests end
	return rec, closeAll(err, ferr, echoErr, werr, requests.Close(), echoes.Close(), snk.Close(), rt.Close())
}

// closeEcho finishes echo, records what the driver measured and where the
// time went in rec, and joins its error to err.
func closeEcho(err error, echo *netEcho, rec *Record) error {
	res, ferr := echo.finish()
	rec.Echo = res
	rec.countPhases()
	rec.EchoParts = partsOf(res, echo.srv.Timings(), rec.measured)
	return closeAll(err, ferr)
}

// closeAll keeps the first error: the one that explains the others.
func closeAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
