package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gonum.org/v1/plot"

	"github.com/fairlyprompt/fairly/jobs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEnv starts a runtime for a test.
func newEnv(t *testing.T) *Env {
	t.Helper()
	env, err := NewEnv(1)
	require.NoError(t, err)
	t.Cleanup(env.Close)
	return env
}

// Cobham's formula at the notebook's comparison point, by hand:
// W0 = λ_H E[S_H²]/2 + λ_L E[S_L²]/2 = 1.4·0.5/2 + 0.2·2/2 = 0.55.
func TestCobham(t *testing.T) {
	w := Workload{RhoHi: 0.7, RhoLo: 0.2, Dist: distExp, Slots: 1}
	wh, ok := w.Cobham(hi)
	require.True(t, ok)
	assert.InDelta(t, 0.55/0.3, wh, 1e-12)
	wl, ok := w.Cobham(lo)
	require.True(t, ok)
	assert.InDelta(t, 0.55/(0.3*0.1), wl, 1e-12)
	// Kleinrock's conservation law: Σ ρ_k W_k = ρ W0 / (1 − ρ).
	assert.InDelta(t, 0.9*0.55/0.1, 0.7*wh+0.2*wl, 1e-9)
	nb, ok := w.Notebook()
	require.True(t, ok)
	assert.InDelta(t, 1/(0.3*0.1), nb, 1e-12, "s̄_L in place of W0")

	// A heavier tail raises E[S²], not the loads.
	heavy := w
	heavy.Dist = distLognormal
	hh, _ := heavy.Cobham(hi)
	assert.InDelta(t, wh*math.Exp(lognormalSigma*lognormalSigma)/2, hh, 1e-9)

	for _, bad := range []Workload{
		{RhoHi: 0.8, RhoLo: 0.2, Dist: distExp, Slots: 1}, // ρ = 1
		{RhoHi: 0.5, RhoLo: 0.2, Dist: distExp, Slots: 2}, // no formula for two slots
	} {
		_, ok := bad.Cobham(lo)
		assert.False(t, ok, "%v", bad)
		_, ok = bad.Notebook()
		assert.False(t, ok, "%v", bad)
	}
	_, ok = Workload{RhoHi: 0.8, RhoLo: 0.2, Dist: distExp, Slots: 1}.Cobham(hi)
	assert.True(t, ok, "at full load the hi class is stable and the lo class still served")
	_, ok = Workload{RhoHi: 0.85, RhoLo: 0.2, Dist: distExp, Slots: 1}.Cobham(hi)
	assert.False(t, ok, "overloaded: the lo backlog keeps the server busy")
}

// The arrivals have the loads asked for, and depend on the seed only.
func TestArrivals(t *testing.T) {
	w := Workload{RhoHi: 0.6, RhoLo: 0.2, Dist: distLognormal, Slots: 2, Horizon: 20000, Seed: 3}
	a := w.Arrivals()
	assert.Equal(t, a, w.Arrivals())
	var work [nClasses]float64
	for i, j := range a {
		work[j.Class] += j.Service
		if i > 0 {
			require.GreaterOrEqual(t, j.At, a[i-1].At)
		}
	}
	// Per slot, over 20000 s: within a few percent of ρ.
	assert.InEpsilon(t, 0.6, work[hi]/w.Horizon/2, 0.05)
	assert.InEpsilon(t, 0.2, work[lo]/w.Horizon/2, 0.1)
	w.Seed = 4
	assert.NotEqual(t, a[0], w.Arrivals()[0])
}

func TestStats(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i)
	}
	assert.Equal(t, 198.0, percentile(xs, 0.99))
	assert.Equal(t, 200.0, xs[0], "percentile leaves its input alone")
	d := describe(xs)
	assert.Equal(t, classStats{N: 200, Mean: 100.5, P99: 198, Max: 200, waits: xs}, d)

	// Two windows of 30 s, the second twice the first.
	jobs := []served{{Arrive: 0, Start: 1}, {Arrive: 10, Start: 13}, {Arrive: 40, Start: 44}, {Arrive: 50, Start: 50, Class: lo}}
	starts, means := windowMeans(jobs, hi)
	assert.Equal(t, []float64{0, 30}, starts)
	assert.Equal(t, []float64{2, 4}, means)
	assert.InDelta(t, math.Sqrt2/3, cv(means), 1e-12)

	// A policy that adds the same wait everywhere has no bursts; one that
	// adds it all in one window of four has a CV of 2.
	base := []float64{1, 5, 2, 3}
	b, ok := burstCV([]float64{2, 6, 3, 4}, base)
	assert.True(t, ok)
	assert.Zero(t, b)
	b, ok = burstCV([]float64{1, 9, 2, 3}, base)
	assert.True(t, ok)
	assert.InDelta(t, 2, b, 1e-12)
	_, ok = burstCV(base, base)
	assert.False(t, ok, "nothing added")
	_, ok = burstCV([]float64{1}, base)
	assert.False(t, ok, "windows that do not pair up")
}

// On one slot, every work-conserving non-preemptive order leaves the same
// work in the system at every instant, so Σ S_j·W_j over all jobs (the
// integral of the queued work) is the same for every policy on the same
// arrivals. That checks, run by run, that the driver measures the
// scheduler's decisions at the right virtual times and that jobs never
// leaves the slot idle.
func TestWorkConservation(t *testing.T) {
	env := newEnv(t)
	w := Workload{RhoHi: 0.7, RhoLo: 0.2, Dist: distExp, Slots: 1, Horizon: 400, Seed: 7}
	arr := w.Arrivals()
	var want float64
	for i, pol := range policies {
		jobs, err := Simulate(env, pol, w)
		require.NoError(t, err)
		require.Len(t, jobs, len(arr), pol.Name)
		sum := 0.0
		for k, j := range jobs {
			require.Equal(t, arr[k].At, j.Arrive)
			require.GreaterOrEqual(t, j.Wait(), 0.0)
			sum += arr[k].Service * j.Wait()
		}
		if i == 0 {
			want = sum
			continue
		}
		assert.InEpsilon(t, want, sum, 1e-9, pol.Name)
	}
}

// A configuration that leaves a slot idle while jobs wait (here a type
// capped below the slots) is reported, not waited on forever, and the
// failed run still shuts its scheduler down.
func TestStallIsReported(t *testing.T) {
	env := newEnv(t)
	static, _ := findPolicy("static")
	capped := static
	capped.Name = "capped"
	capped.config = func(slots int, p priorities) jobs.Config {
		cfg := static.config(slots, p)
		for name, tc := range cfg.Types {
			tc.MaxConcurrency = 1
			cfg.Types[name] = tc
		}
		return cfg
	}
	_, err := Simulate(env, capped, Workload{RhoHi: 0.9, RhoLo: 0.05, Dist: distExp, Slots: 2, Horizon: 100, Seed: 1})
	require.ErrorIs(t, err, errStall)
	assert.Contains(t, err.Error(), "capped")
}

// The same seed gives the same run, on two slots and with aging, where
// hand-offs race the most.
func TestDeterministic(t *testing.T) {
	env := newEnv(t)
	aging, _ := findPolicy("aging")
	w := Workload{RhoHi: 0.8, RhoLo: 0.1, Dist: distExp, Slots: 2, Horizon: 300, Seed: 11}
	a, err := Simulate(env, aging, w)
	require.NoError(t, err)
	b, err := Simulate(env, aging, w)
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

// The policies do what they are for: static priority starves the lo class
// as ρ_H grows, aging caps its wait, fair queuing serves it almost at once,
// and weighted groups guarantee it a slot of two.
func TestPoliciesBehave(t *testing.T) {
	env := newEnv(t)
	mean := func(name string, slots int, class int) float64 {
		pol, _ := findPolicy(name)
		jobs, err := Simulate(env, pol, Workload{RhoHi: 0.75, RhoLo: 0.2, Dist: distExp, Slots: slots, Horizon: 1500, Seed: 5})
		require.NoError(t, err)
		return summarise(jobs)[class].Mean
	}
	static := mean("static", 1, lo)
	assert.Greater(t, static, 20.0)
	assert.Less(t, mean("aging", 1, lo), static/2)
	assert.Less(t, mean("wfq", 1, lo), 3.0)
	assert.Less(t, mean("groups", 2, lo), mean("static", 2, lo)/2)
	assert.Less(t, mean("static", 1, hi), mean("aging", 1, hi))
}

// Static priority measured on jobs against Cobham's formula, at a size
// the race detector runs in seconds: ρ_H = 0.3 (ρ = 0.5), four seeds of
// 10 000 s, about 7 600 lo and 22 800 hi jobs. Measured over 24 seeds,
// the relative error's standard deviation is about 10% for 2 000 lo jobs
// and 6% for 6 000 hi jobs, so about 5% and 3% here: the 15% bound is
// three of them for lo and five for hi, and the fixed seeds make the test
// reproducible.
// The full check, to 10% at every ρ_H ≤ 0.8, is TestCobhamFull.
func TestStaticMatchesCobham(t *testing.T) {
	env := newEnv(t)
	res, err := Execute(env, Plan{Policies: policies[:1], Setups: []Setup{{Slots: 1, Dist: distExp}},
		RhoHi: []float64{0.3}, RhoLo: notebookRhoLo, Seeds: 4, Seed: 1, Horizon: 10000, Parallel: 8}, nil)
	require.NoError(t, err)
	rows := checkRows(res.Rows)
	require.Len(t, rows, 2)
	for _, r := range rows {
		t.Logf("ρ_H %.2f %s: %d jobs, measured %.3f s, Cobham %.3f s, error %+.1f%%", r.RhoHi, r.Class, r.Jobs, r.Measured, r.Theory, 100*r.RelErr)
		assert.Less(t, math.Abs(r.RelErr), 0.15, r.Class)
	}
}

// TestCobhamFull is the check at full size: static priority on
// jobs within 10% of Cobham's formula at every ρ_H ≤ 0.8 (the lo class
// only while ρ < 1). It takes minutes; run it with
//
//	STARVATION_FULL=1 go test -run CobhamFull -v -timeout 30m ./examples/starvation/
func TestCobhamFull(t *testing.T) {
	if os.Getenv("STARVATION_FULL") == "" {
		t.Skip("set STARVATION_FULL=1 to run the full Cobham check")
	}
	var out bytes.Buffer
	code := run([]string{"-check", "-progress=false", "-parallel", "8"}, &out, &out)
	t.Log("\n" + out.String())
	assert.Zero(t, code)
}

func TestFlags(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errs))
	assert.Contains(t, errs.String(), "usage: starvation")
	for _, args := range [][]string{
		{"-rho-hi", "0.5,1.2"}, {"-rho-hi", "x"}, {"-rho-lo", "1"}, {"-seeds", "0"}, {"-slots", "0"},
		{"-policies", "static,fifo"}, {"-horizon", "10"}, {"-parallel", "0"}, {"-series-rho", "-1"},
		{"-series-rho-lo", "2"}, {"-nonsense"}, {"extra"}, {"-seeds", "-3"}, {"-parallel", "1000"}, {"-rho-lo", "-0.5"},
	} {
		errs.Reset()
		assert.Equal(t, 2, run(args, &out, &errs), "%v", args)
		assert.True(t, strings.HasPrefix(errs.String(), "starvation: "), "%v: %s", args, errs.String())
		assert.Equal(t, 1, strings.Count(errs.String(), "starvation:"), "%v: one prefix in %s", args, errs.String())
	}
}

// A small run end to end: the table, the JSON rows other tools read, and
// the charts.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	jsonFile := filepath.Join(dir, "rows.json")
	var out, errs bytes.Buffer
	code := run([]string{"-horizon", "300", "-seeds", "2", "-rho-hi", "0.3,0.85", "-policies", "static,wfq",
		"-slots", "1", "-progress=false", "-json", jsonFile}, &out, &errs)
	require.Zero(t, code, errs.String())
	assert.Contains(t, out.String(), "Cobham")
	// Without -out the charts go to a new temporary folder, not into the
	// working directory.
	_, list, ok := strings.Cut(out.String(), "charts: ")
	require.True(t, ok, out.String())
	first, _, _ := strings.Cut(strings.TrimSpace(list), ", ")
	charts := filepath.Dir(first)
	t.Cleanup(func() { os.RemoveAll(charts) })
	assert.True(t, strings.HasPrefix(charts, os.TempDir()), charts)
	here, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, here, 1)
	assert.Equal(t, "rows.json", here[0].Name())

	var rows []map[string]any
	b, err := os.ReadFile(jsonFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rows))
	// 2 policies × 2 loads × 2 classes × 2 setups (exponential and heavy tail).
	require.Len(t, rows, 16)
	for _, r := range rows {
		for _, f := range []string{"policy", "slots", "rho_hi", "rho_lo", "class", "mean_wait_s", "p99_wait_s", "max_wait_s", "theory_mean_wait_s"} {
			assert.Contains(t, r, f)
		}
		assert.Contains(t, []any{"hi", "lo"}, r["class"])
		theory := r["theory_mean_wait_s"]
		formula := r["policy"] == "static" && r["slots"] == 1.0 && r["rho_hi"] == 0.3
		if formula {
			assert.IsType(t, 0.0, theory, "%v", r)
		} else {
			assert.Nil(t, theory, "%v", r)
		}
	}

	entries, err := os.ReadDir(charts)
	require.NoError(t, err)
	assert.Len(t, entries, 5, "mean and p99 for two setups, and the time series")
	for _, e := range entries {
		f, err := os.Open(filepath.Join(charts, e.Name()))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, e.Name())
		assert.Greater(t, img.Bounds().Dx(), 500, e.Name())
	}
}

// The charts draw with any valid flags: one load and one seed leave each
// log axis a single value, which gonum widened to below 0 (its log ticks
// then panicked), and a wait of 0 has no place on a log axis.
func TestChartsOfOnePoint(t *testing.T) {
	out := t.TempDir()
	var stdout, errs bytes.Buffer
	code := run([]string{"-horizon", "120", "-seeds", "1", "-rho-hi", "0.5", "-policies", "static",
		"-slots", "1", "-heavy=false", "-progress=false", "-out", out}, &stdout, &errs)
	require.Zero(t, code, errs.String())
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "mean and p99 for one setup, and the time series")

	for _, vals := range [][2]float64{{0.4, 0.4}, {0, 0}, {math.Inf(1), math.Inf(-1)}, {0, 5}} {
		var a plot.Axis
		a.Min, a.Max = vals[0], vals[1]
		fitLogAxis(&a, minWait)
		assert.True(t, a.Min > 0 && a.Max > a.Min && !math.IsInf(a.Max, 0), "%v gave [%v, %v]", vals, a.Min, a.Max)
	}
}
