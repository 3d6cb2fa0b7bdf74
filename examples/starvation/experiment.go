package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Setup is one swept configuration of the server: slots and the service
// time distribution.
type Setup struct {
	Slots int
	Dist  string
}

func (s Setup) String() string { return fmt.Sprintf("%d slot(s), %s service", s.Slots, s.Dist) }

// Plan is an experiment: every policy, setup, ρ_H and seed.
type Plan struct {
	Policies []Policy
	Setups   []Setup
	RhoHi    []float64
	RhoLo    float64
	Seeds    int
	Seed     uint64 // the first seed; the others follow it
	Horizon  float64
	Parallel int // simulations at once
	// SeriesRho is the ρ_H of the time-series runs (one seed, one slot,
	// exponential service); 0 skips them.
	SeriesRho      float64
	SeriesRhoLo    float64
	SeriesPolicies []Policy
}

// warmupShare is the fraction of the horizon whose arrivals are not
// measured: the system starts empty, which would bias the waits down.
const warmupShare = 0.05

// workload is the plan's workload for a setup, a load and a seed.
func (p Plan) workload(s Setup, rhoHi float64, seed int) Workload {
	return Workload{RhoHi: rhoHi, RhoLo: p.RhoLo, Dist: s.Dist, Slots: s.Slots,
		Horizon: p.Horizon, Warmup: warmupShare * p.Horizon, Seed: p.Seed + uint64(seed)}
}

// Row is one line of the table: a policy's waits for one class at one
// load, over every seed. The JSON names are the interface other tools
// read.
type Row struct {
	Policy  string  `json:"policy"`
	Slots   int     `json:"slots"`
	Service string  `json:"service"`
	RhoHi   float64 `json:"rho_hi"`
	RhoLo   float64 `json:"rho_lo"`
	Class   string  `json:"class"`
	Jobs    int     `json:"jobs"`
	Seeds   int     `json:"seeds"`
	// Over the jobs of every seed together.
	MeanWait float64 `json:"mean_wait_s"`
	P99Wait  float64 `json:"p99_wait_s"`
	MaxWait  float64 `json:"max_wait_s"`
	// Cobham's mean wait, for static priority on one slot below full
	// load; null elsewhere.
	TheoryMeanWait *float64 `json:"theory_mean_wait_s"`
	// The spread over seeds: the smallest and largest per-seed values.
	MeanWaitMin float64 `json:"mean_wait_min_s"`
	MeanWaitMax float64 `json:"mean_wait_max_s"`
	P99WaitMin  float64 `json:"p99_wait_min_s"`
	P99WaitMax  float64 `json:"p99_wait_max_s"`
	// WindowCV is the oscillation of the class's service: the coefficient
	// of variation of its mean wait over consecutive windows, averaged
	// over seeds.
	WindowCV float64 `json:"window_cv"`
	// BurstCV is burstCV averaged over seeds: how unevenly over time the
	// policy adds wait to the hi class compared with static priority on
	// the same arrivals; null for the lo class, for static priority
	// itself, where the policy adds no wait, or without static runs.
	BurstCV *float64 `json:"burst_cv"`
	// Overloaded: ρ_H + ρ_L ≥ 1, so the backlog grows while arrivals go
	// on and the waits depend on the horizon.
	Overloaded bool `json:"overloaded"`
}

// Series is one run's jobs, for the time-series chart.
type Series struct {
	Policy Policy
	W      Workload
	Jobs   []served
}

// Results are what Execute measured.
type Results struct {
	Plan   Plan
	Rows   []Row
	Series []Series
}

// task is one simulation of the plan.
type task struct {
	pol Policy
	w   Workload
	out *[nClasses]classStats // summary, for the sweep
	ser *Series               // jobs, for a time series
}

// Execute runs the plan, at most Parallel simulations at once, and
// reports each finished simulation to progress (which may be nil).
func Execute(env *Env, p Plan, progress func(done, total int)) (*Results, error) {
	var tasks []task
	for _, s := range p.Setups {
		for _, rho := range p.RhoHi {
			for _, pol := range p.Policies {
				for seed := range p.Seeds {
					tasks = append(tasks, task{pol: pol, w: p.workload(s, rho, seed)})
				}
			}
		}
	}
	stats := make([][nClasses]classStats, len(tasks))
	for i := range tasks {
		tasks[i].out = &stats[i]
	}
	res := &Results{Plan: p}
	if p.SeriesRho > 0 {
		res.Series = make([]Series, len(p.SeriesPolicies))
		for i, pol := range p.SeriesPolicies {
			w := p.workload(Setup{Slots: 1, Dist: distExp}, p.SeriesRho, 0)
			w.RhoLo = p.SeriesRhoLo
			res.Series[i] = Series{Policy: pol, W: w}
			tasks = append(tasks, task{pol: pol, w: w, ser: &res.Series[i]})
		}
	}
	if err := runTasks(env, tasks, p.Parallel, progress); err != nil {
		return nil, err
	}
	for i := 0; i < len(stats); i += p.Seeds {
		res.Rows = append(res.Rows, aggregate(tasks[i], stats[i:i+p.Seeds], staticOf(tasks, stats, i, p.Seeds, len(p.Policies)))...)
	}
	return res, nil
}

// runTasks runs the simulations on parallel goroutines and stops at the
// first error.
func runTasks(env *Env, tasks []task, parallel int, progress func(done, total int)) error {
	var (
		mu       sync.Mutex
		next     int
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || next == len(tasks) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range max(1, parallel) {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				t := tasks[i]
				jobs, err := Simulate(env, t.pol, t.w)
				if err == nil && t.out != nil {
					*t.out = summarise(jobs)
				}
				if err == nil && t.ser != nil {
					t.ser.Jobs = jobs
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				done++
				if progress != nil && err == nil {
					progress(done, len(tasks))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// staticOf finds the static-priority runs on the same arrivals as the
// runs starting at task i. Tasks are ordered by setup, ρ_H, policy and
// seed, so the runs of one setup and ρ_H form a block of policies × seeds
// tasks, and the arrivals depend only on the setup, ρ_H and seed.
func staticOf(tasks []task, stats [][nClasses]classStats, i, seeds, policies int) [][nClasses]classStats {
	block := i - i%(policies*seeds)
	for j := block; j < block+policies*seeds; j += seeds {
		if tasks[j].pol.Name == "static" {
			return stats[j : j+seeds]
		}
	}
	return nil
}

// aggregate makes the rows of one (policy, setup, ρ_H) from its seeds,
// given the static-priority runs on the same arrivals (or nil).
func aggregate(t task, seeds, static [][nClasses]classStats) []Row {
	w := t.w
	rows := make([]Row, 0, nClasses)
	for c := range nClasses {
		var pooled []float64
		r := Row{Policy: t.pol.Name, Slots: w.Slots, Service: w.Dist, RhoHi: w.RhoHi, RhoLo: w.RhoLo,
			Class: classNames[c], Seeds: len(seeds), Overloaded: !w.stable(),
			MeanWaitMin: math.Inf(1), P99WaitMin: math.Inf(1)}
		burst, paired := 0.0, c == hi && t.pol.Name != "static" && static != nil
		for k, s := range seeds {
			st := s[c]
			if paired {
				b, ok := burstCV(st.windows, static[k][c].windows)
				burst += b / float64(len(seeds))
				paired = ok
			}
			pooled = append(pooled, st.waits...)
			r.MaxWait = math.Max(r.MaxWait, st.Max)
			r.MeanWaitMin, r.MeanWaitMax = math.Min(r.MeanWaitMin, st.Mean), math.Max(r.MeanWaitMax, st.Mean)
			r.P99WaitMin, r.P99WaitMax = math.Min(r.P99WaitMin, st.P99), math.Max(r.P99WaitMax, st.P99)
			r.WindowCV += st.WindowCV / float64(len(seeds))
		}
		if paired {
			r.BurstCV = &burst
		}
		all := describe(pooled)
		r.Jobs, r.MeanWait, r.P99Wait = all.N, all.Mean, all.P99
		if all.N == 0 {
			r.MeanWaitMin, r.P99WaitMin = 0, 0
		}
		if th, ok := w.Cobham(c); ok && t.pol.Name == "static" {
			r.TheoryMeanWait = &th
		}
		rows = append(rows, r)
	}
	return rows
}

// find returns the rows of a policy, setup and class, in order of ρ_H.
func (r *Results) find(policy string, s Setup, class string) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Policy == policy && row.Slots == s.Slots && row.Service == s.Dist && row.Class == class {
			out = append(out, row)
		}
	}
	slices.SortFunc(out, func(a, b Row) int { return cmp.Compare(a.RhoHi, b.RhoHi) })
	return out
}
