package harness

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/internal/sim"
)

// The sim experiment: fairly's scheduling algorithm at P = 2 to 128 in
// internal/sim's discrete-event simulator, which drives the real banks,
// mailboxes, criterion and scheduling decisions with P virtual workers on
// a virtual clock. Per kernel (fib, uts, bfs, sort as DAGs of the real
// kernels' shapes) and processor count: the kernel alone, the kernel at
// low priority beside a time sink at medium and Poisson interactive
// arrivals at high priority under each criterion (Table 1), and the kernel
// beside the arrivals with every share at high priority (Table 3). Every
// run is checked against the paper's Theorems 2 and 3 (internal/sim's
// Check); a violated bound fails the experiment.

// Kinds of the sim experiment's records.
const (
	kindSim      = "sim"             // kernel loaded under a criterion
	kindSimWTA   = "sim-wta"         // kernel beside the arrivals, 100-0-0
	kindSimCosts = "sim-calibration" // the costs simulated with and measured now
)

// The simulated workload, the same at every P: a kernel of Config.SimWork
// of work per worker (weak scaling; by default, so that every P sees tens
// of rounds) and interactive threads of simEchoWork each arriving at
// Config.SimRate per second.
const (
	defaultSimRate = 2000
	simEchoWork    = 20 * time.Microsecond
)

// The sim experiment's defaults of Config.SimSeed and Config.SimWork.
const (
	DefaultSimSeed = 2019
	DefaultSimWork = 50 * time.Millisecond
)

// SimRecord holds what one simulated setting measured; it is part of a
// Record of kind "sim" or "sim-wta" (its fields appear in the record's
// JSON).
type SimRecord struct {
	// Stretch is the kernel's time loaded over its time alone, Expected
	// the criterion's 1/F(low) ("sim" only).
	Stretch  float64 `json:"stretch,omitempty"`
	Expected float64 `json:"expected,omitempty"`
	// Response times of the interactive threads, in virtual µs and in
	// rounds of the quantum.
	ResponseP50us     float64 `json:"response_p50_us,omitempty"`
	ResponseP99us     float64 `json:"response_p99_us"`
	ResponseP50Rounds float64 `json:"response_p50_rounds,omitempty"`
	ResponseP99Rounds float64 `json:"response_p99_rounds,omitempty"`
	Responses         int     `json:"responses,omitempty"`
	// Waits of the interactive threads for a worker, arrival to their first
	// instruction, in virtual µs: the part of the response that the real
	// records' echo_parts call fairly's part (the rest is their own work).
	WaitP50us float64 `json:"wait_p50_us"`
	WaitP99us float64 `json:"wait_p99_us"`
	// IdleFraction is the processor time with nothing running, over P times
	// the kernel's time, in the loaded run; AloneIdle in the run alone.
	IdleFraction float64 `json:"idle_fraction"`
	AloneIdle    float64 `json:"alone_idle_fraction,omitempty"`
	// Speedup is the kernel's work over its time alone; BoundSpeedup the
	// work/span bound min(P, W/S).
	Speedup      float64 `json:"speedup"`
	BoundSpeedup float64 `json:"bound_speedup"`
	// PhaseBoundSpeedup is W over sim.Kernel.BoundTime: max(W/P, S) summed
	// over the kernel's phases, which no scheduler beats.
	PhaseBoundSpeedup float64 `json:"phase_bound_speedup,omitempty"`
	// Deals and requests per round of the quantum, over all workers.
	DealsPerRound    float64 `json:"deals_per_round,omitempty"`
	RequestsPerRound float64 `json:"requests_per_round,omitempty"`
	// Virtual times in µs: the kernel loaded (or beside the arrivals) and alone.
	TimeUs  float64 `json:"time_us,omitempty"`
	AloneUs float64 `json:"alone_us,omitempty"`
	// The kernel's DAG: work and span in virtual µs.
	WorkUs float64 `json:"work_us,omitempty"`
	SpanUs float64 `json:"span_us,omitempty"`
	// Bounds is how many inequalities of Theorems 2 and 3 were checked, all
	// of which held; Digest sums up the loaded run's event log.
	Bounds int    `json:"bounds_checked,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// SimCalibration is the record of kind "sim-calibration": the costs
// simulated with, and the same costs measured in this run.
type SimCalibration struct {
	Costs         *sim.Costs `json:"costs,omitempty"`
	Grain         *sim.Grain `json:"sim_grain,omitempty"` // not "grain": Record.Grain has that name
	Measured      *sim.Costs `json:"measured_costs,omitempty"`
	MeasuredGrain *sim.Grain `json:"measured_grain,omitempty"`
}

// The criteria of the kernel alone and of winner-take-all.
var (
	simAlone = Criterion{0, 0, 100}
	simWTA   = Criterion{100, 0, 0}
)

// simRuns runs the experiment's simulations on every processor, in the
// order the steps need them, and keeps their results for the steps.
type simRuns struct {
	once    sync.Once
	jobs    []*simJob
	byKey   map[string]*simJob
	kernels sync.Map      // "name/P" → *kernelOnce
	work    time.Duration // the kernels' work per worker
}

type kernelOnce struct {
	once sync.Once
	k    *sim.Kernel
	err  error
}

type simJob struct {
	key    string
	cfg    func() (sim.Config, error)
	done   chan struct{}
	res    *sim.Result
	bounds int // how many bounds of the theorems were checked, all of which held
	err    error
}

func simKey(kernel string, procs int, c Criterion) string {
	return fmt.Sprintf("%s/%d/%v", kernel, procs, c)
}

// simKernels are the simulated kernels the configuration chose.
func (c *Config) simKernels() []string {
	var out []string
	for _, name := range sim.KernelNames {
		if slices.ContainsFunc(c.Kernels, func(k kernels.Kernel) bool { return k.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// kernel builds the DAG of name for procs workers once.
func (r *simRuns) kernel(name string, procs int) (*sim.Kernel, error) {
	v, _ := r.kernels.LoadOrStore(fmt.Sprint(name, "/", procs), &kernelOnce{})
	ko := v.(*kernelOnce)
	ko.once.Do(func() {
		ko.k, ko.err = sim.NewKernel(name, int64(procs)*int64(r.work), sim.DefaultGrain(), sim.DefaultCosts())
	})
	return ko.k, ko.err
}

// plan lists every simulation of cfg: per kernel and P, alone, loaded under
// each criterion, and winner-take-all.
func (r *simRuns) plan(cfg *Config) {
	r.byKey = make(map[string]*simJob)
	r.work = cfg.simWork()
	add := func(name string, procs int, c Criterion) {
		key := simKey(name, procs, c)
		if r.byKey[key] != nil {
			return
		}
		j := &simJob{key: key, done: make(chan struct{}), cfg: func() (sim.Config, error) {
			k, err := r.kernel(name, procs)
			if err != nil {
				return sim.Config{}, err
			}
			// A long -sim-work needs more than the default limit of a thousand rounds.
			sc := sim.Config{Procs: procs, Criterion: c, Kernel: k, Seed: cfg.simSeed(),
				Limit: max(1000*sim.DefaultParams().Quantum, 20*int64(r.work))}
			if c != simAlone { // the sink and the echo start first, as in Tables 1 and 3
				sc.Rate, sc.EchoWork = cfg.simRate(), int64(simEchoWork)
				sc.Sink, sc.Lead = c != simWTA, sim.DefaultParams().Quantum
			}
			return sc, nil
		}}
		r.byKey[key] = j
		r.jobs = append(r.jobs, j)
	}
	for _, name := range cfg.simKernels() {
		for _, p := range cfg.Procs {
			add(name, p, simAlone)
			for _, c := range cfg.Criteria {
				add(name, p, c)
			}
			add(name, p, simWTA)
		}
	}
}

// start runs the jobs on GOMAXPROCS goroutines, in plan order.
func (r *simRuns) start() {
	next := make(chan *simJob)
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for j := range next {
				j.res, j.bounds, j.err = runChecked(j.cfg)
				close(j.done)
			}
		}()
	}
	go func() {
		for _, j := range r.jobs {
			next <- j
		}
		close(next)
	}()
}

// runChecked runs one simulation and checks the theorems on it; it returns
// how many bounds it checked.
func runChecked(mk func() (sim.Config, error)) (*sim.Result, int, error) {
	cfg, err := mk()
	if err != nil {
		return nil, 0, err
	}
	res, err := sim.Run(cfg)
	if err != nil {
		return nil, 0, err
	}
	bounds := sim.Check(cfg, res)
	if v := slices.DeleteFunc(slices.Clone(bounds), sim.Bound.Holds); len(v) > 0 {
		msgs := make([]string, 0, min(len(v), 3))
		for _, b := range v[:min(len(v), 3)] {
			msgs = append(msgs, b.String())
		}
		return nil, 0, fmt.Errorf("%d bounds violated, e.g. %s", len(v), strings.Join(msgs, "; "))
	}
	return res, len(bounds), nil
}

// result waits for the simulation of key; bounds is how many bounds of the
// theorems it checked.
func (r *simRuns) result(key string) (res *sim.Result, bounds int, err error) {
	j := r.byKey[key]
	<-j.done
	return j.res, j.bounds, j.err
}

// simSteps are the experiment's steps: the calibration, then one per
// kernel, P and criterion (the runs themselves go on in the background).
func (s *suite) simSteps(add func(run func() (*Record, error), format string, a ...any)) {
	r := &simRuns{}
	r.plan(s.cfg)
	add(func() (*Record, error) {
		measured, grain, err := simCalibration()
		if err != nil {
			return nil, err
		}
		r.once.Do(r.start) // after the calibration, which must not share the processors
		costs, defGrain := sim.DefaultCosts(), sim.DefaultGrain()
		return &Record{Kind: kindSimCosts, SimCalibration: &SimCalibration{Costs: &costs, Grain: &defGrain, Measured: &measured, MeasuredGrain: &grain}}, nil
	}, "sim calibration")
	for _, name := range s.cfg.simKernels() {
		for _, p := range s.cfg.Procs {
			for _, c := range s.cfg.Criteria {
				add(func() (*Record, error) { return r.record(kindSim, name, p, c) }, "sim %s %v P=%d", name, c, p)
			}
			add(func() (*Record, error) { return r.record(kindSimWTA, name, p, simWTA) }, "sim %s winner-take-all P=%d", name, p)
		}
	}
}

// record sums up the runs of one setting.
func (r *simRuns) record(kind, name string, procs int, c Criterion) (*Record, error) {
	alone, _, err := r.result(simKey(name, procs, simAlone))
	if err != nil {
		return nil, fmt.Errorf("alone: %w", err)
	}
	res, bounds, err := r.result(simKey(name, procs, c))
	if err != nil {
		return nil, err
	}
	k, err := r.kernel(name, procs)
	if err != nil {
		return nil, err
	}
	q := float64(sim.DefaultParams().Quantum)
	rounds := float64(res.Time) / q
	sr := &SimRecord{
		IdleFraction: res.Idle, AloneIdle: alone.Idle,
		Speedup: float64(k.Work) / float64(alone.Time), BoundSpeedup: min(float64(procs), float64(k.Work)/float64(k.Span)),
		PhaseBoundSpeedup: float64(k.Work) / float64(k.BoundTime(procs, sim.DefaultCosts())),
		DealsPerRound:     float64(res.Deals) / rounds, RequestsPerRound: float64(res.Requests) / rounds,
		TimeUs: float64(res.Time) / 1e3, AloneUs: float64(alone.Time) / 1e3,
		WorkUs: float64(k.Work) / 1e3, SpanUs: float64(k.Span) / 1e3,
		Bounds: bounds, Digest: fmt.Sprintf("%016x", res.Digest),
		Responses: len(res.Responses),
	}
	if kind == kindSim {
		sr.Stretch, sr.Expected = float64(res.Time)/float64(alone.Time), c.ExpectedStretch()
	}
	if len(res.Responses) > 0 { // at a low -sim-rate a short run may see no arrival
		lat := latency.Of(durations(res.Responses), 0) // nearest-rank percentiles
		p50, p99 := float64(lat.P50), float64(lat.P99)
		sr.ResponseP50us, sr.ResponseP99us = p50/1e3, p99/1e3
		sr.ResponseP50Rounds, sr.ResponseP99Rounds = p50/q, p99/q
		wait := latency.Of(durations(res.Waits), 0)
		sr.WaitP50us, sr.WaitP99us = float64(wait.P50)/1e3, float64(wait.P99)/1e3
	}
	return &Record{Kind: kind, Kernel: name, Procs: procs, Criterion: c.String(), Size: int(k.Size), SimRecord: sr}, nil
}

// durations are virtual nanoseconds as durations.
func durations(ns []int64) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, r := range ns {
		out[i] = time.Duration(r)
	}
	return out
}

// simSections are the sim experiment's tables and charts.
func simSections(res *Results) []Section {
	var kernels []string
	var cal *Record
	for _, rec := range res.Records {
		if rec.Kind == kindSimCosts {
			cal = rec
		}
		if rec.Kind == kindSim && !slices.Contains(kernels, rec.Kernel) {
			kernels = append(kernels, rec.Kernel)
		}
	}
	if cal == nil {
		return nil
	}
	find := func(kind, k string, p int, c Criterion) *SimRecord {
		if rec := res.find(Record{Kind: kind, Kernel: k, Procs: p, Criterion: c.String()}); rec != nil {
			return rec.SimRecord
		}
		return nil
	}
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	// pair formats figures of the interactive threads, or a dash if none ended.
	pair := func(r *SimRecord, format string, a ...any) string {
		if r.Responses == 0 {
			return "—"
		}
		return fmt.Sprintf(format, a...)
	}
	t := table{head: []string{"kernel", "P", "criterion", "alone (ms)", "loaded (ms)", "stretch (expected)", "÷ expected",
		"response p50 / p99 (µs)", "p50 / p99 (rounds)", "idle", "deals / round", "requests / round", "speedup alone (bound)", "÷ bound", "÷ phase bound", "bounds checked"}}
	for _, k := range kernels {
		for _, p := range res.Procs {
			for _, c := range res.Criteria {
				r := find(kindSim, k, p, c)
				if r == nil {
					continue
				}
				t.add(k, fmt.Sprint(p), c.String(), fmt.Sprintf("%.1f", r.AloneUs/1e3), fmt.Sprintf("%.1f", r.TimeUs/1e3),
					fmt.Sprintf("%.2f (%.2f)", r.Stretch, r.Expected), f2(r.Stretch/r.Expected),
					pair(r, "%.0f / %.0f", r.ResponseP50us, r.ResponseP99us), pair(r, "%.3f / %.2f", r.ResponseP50Rounds, r.ResponseP99Rounds),
					fmt.Sprintf("%.3f", r.IdleFraction), fmt.Sprintf("%.1f", r.DealsPerRound), fmt.Sprintf("%.1f", r.RequestsPerRound),
					fmt.Sprintf("%.1f (%.0f)", r.Speedup, r.BoundSpeedup), f2(r.Speedup/r.BoundSpeedup), f2(r.Speedup/r.PhaseBoundSpeedup), fmt.Sprint(r.Bounds))
			}
		}
	}
	w := table{head: []string{"kernel", "P", "kernel (ms)", "work / time", "response p50 / p99 (µs)", "wait p50 / p99 (µs)", "p99 (rounds)", "idle", "bounds checked"}}
	for _, k := range kernels {
		for _, p := range res.Procs {
			if r := find(kindSimWTA, k, p, simWTA); r != nil {
				w.add(k, fmt.Sprint(p), fmt.Sprintf("%.1f", r.TimeUs/1e3), f2(r.WorkUs/r.TimeUs),
					pair(r, "%.0f / %.0f", r.ResponseP50us, r.ResponseP99us), pair(r, "%.1f / %.1f", r.WaitP50us, r.WaitP99us),
					pair(r, "%.2f", r.ResponseP99Rounds), fmt.Sprintf("%.3f", r.IdleFraction), fmt.Sprint(r.Bounds))
			}
		}
	}
	sc := cal.SimCalibration
	costs := table{head: []string{"cost (ns)", "simulated", "measured now"}}
	for _, row := range [][3]any{
		{"fork (lazy push)", sc.Costs.Spawn, sc.Measured.Spawn}, {"join (inline take)", sc.Costs.Join, sc.Measured.Join},
		{"pass through the duties", sc.Costs.Service, sc.Measured.Service}, {"round switch", sc.Costs.Round, sc.Measured.Round},
		{"deal (split, claim, send)", sc.Costs.Deal, sc.Measured.Deal}, {"receive a deal", sc.Costs.Receive, sc.Measured.Receive},
		{"token hand-off", sc.Costs.Handoff, sc.Measured.Handoff}, {"a thread resumed after Await takes a worker", sc.Costs.Arrive, sc.Measured.Arrive},
		{"wake a parked worker", sc.Costs.Wake, sc.Measured.Wake},
		{"wake a spinning worker", sc.Costs.SpinWake, sc.Measured.SpinWake}, {"steer into an inbox", sc.Costs.Steer, sc.Measured.Steer},
		{"sink chunk, fib(18)", sc.Costs.SinkChunk, sc.Measured.SinkChunk},
		{fmt.Sprintf("fib leaf, fib(%d)", sim.FibLeafN), sc.Grain.FibLeaf, sc.MeasuredGrain.FibLeaf},
		{fmt.Sprintf("UTS node, fib(%d)", sim.UTSNodeN), sc.Grain.UTSNode, sc.MeasuredGrain.UTSNode},
		{"BFS, per edge", sc.Grain.BFSEdge, sc.MeasuredGrain.BFSEdge}, {"sort, per key and level", sc.Grain.SortKey, sc.MeasuredGrain.SortKey},
	} {
		costs.add(fmt.Sprint(row[0]), fmt.Sprint(row[1]), fmt.Sprint(row[2]))
	}
	p := sim.DefaultParams()
	return []Section{
		{
			Name:  "sim",
			Title: "Simulation: stretch and response at P workers",
			Text: fmt.Sprintf("internal/sim runs fairly's scheduling (the real banks, mailboxes, criterion and internal/policy decisions) with P virtual workers on a virtual clock. "+
				"Each kernel is a DAG of the real kernel's shape with %v of work per worker; it runs alone (criterion 0-0-100), then at low priority beside a time sink (2P threads at medium) "+
				"and interactive threads of %v arriving as a Poisson process at %g/s at high priority, each taking a worker at once as a thread resumed on its goroutine does. Quantum %v, deals every %v, interrupt %v, prompt budget %v; seed %d. "+
				"Stretch is loaded over alone; response is arrival to end; speedup is work over time alone, against min(P, work/span) and against the phase bound (max(W/P, S) summed over the kernel's phases, which no scheduler beats). "+
				"Every run checked the paper's Theorems 2 and 3 (bounds checked: all held).",
				res.simWork(), simEchoWork, res.simRate(), time.Duration(p.Quantum), time.Duration(p.DealInterval), time.Duration(p.Interrupt), time.Duration(p.Budget), res.simSeed()),
			Table: t.String(),
			Chart: "sim-stretch.png",
			draw:  func(path string) error { return drawSimStretch(res, kernels, path) },
		},
		{
			Name:  "sim",
			Title: "Simulation: response time of the top priority against P",
			Text:  "The interactive threads' p99 response time, in rounds of the quantum, in the loaded runs above and winner-take-all (below).",
			Chart: "sim-response.png",
			draw:  func(path string) error { return drawSimResponse(res, kernels, path) },
		},
		{
			Name:  "sim",
			Title: "Simulation: winner-take-all",
			Text: "The kernel at low priority beside the interactive arrivals, every share to the high priority (criterion 100-0-0), as in Table 3. " +
				"The wait is an arrival's time to its first instruction on a worker, the part of Table 3's response that its last columns call fairly's part; the rest of the response is the arrival's own work.",
			Table: w.String(),
		},
		{
			Name:  "sim",
			Title: "Simulation: speedup against the work/span bound",
			Text:  "Each kernel alone: work over time, as a fraction of min(P, work/span).",
			Chart: "sim-speedup.png",
			draw:  func(path string) error { return drawSimSpeedup(res, kernels, path) },
		},
		{
			Name:  "sim",
			Title: "Simulation: cost parameters",
			Text: "The simulator's costs of the runtime's operations and of the kernels' leaves, in virtual ns: sim.DefaultCosts and sim.DefaultGrain (medians of five runs on the development machine " +
				"of the calibration in bench/harness/simcal.go, fixed so that the tables are reproducible), beside the same calibration run now.",
			Table: costs.String(),
		},
	}
}
