package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimExperiment(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"sim"}
	cfg.Kernels = lookup(t, "fib", "bfs", "strassen") // strassen has no simulated DAG: left out
	cfg.Procs = []int{2, 8}
	require.NoError(t, cfg.Validate())
	res, err := Run(cfg)
	require.NoError(t, err)

	kinds := map[string]int{}
	for _, rec := range res.Records {
		kinds[rec.Kind]++
		if rec.Kind != kindSim {
			continue
		}
		r := rec.SimRecord
		assert.Positive(t, r.Stretch, "%s P=%d", rec.Kernel, rec.Procs)
		assert.Equal(t, Criterion{50, 25, 25}.ExpectedStretch() == r.Expected, rec.Criterion == "50-25-25")
		assert.Positive(t, r.ResponseP99us)
		assert.GreaterOrEqual(t, r.ResponseP99us, r.ResponseP50us)
		assert.LessOrEqual(t, r.Speedup, r.BoundSpeedup*1.001, "%s P=%d: above the work/span bound", rec.Kernel, rec.Procs)
		assert.LessOrEqual(t, r.Speedup, r.PhaseBoundSpeedup*1.001, "%s P=%d: above the phase bound", rec.Kernel, rec.Procs)
		assert.LessOrEqual(t, r.PhaseBoundSpeedup, r.BoundSpeedup*1.001, "%s P=%d: the phase bound is the tighter", rec.Kernel, rec.Procs)
		assert.Positive(t, r.Bounds, "theorems checked")
	}
	for _, rec := range res.Records {
		if rec.Kind == kindSimWTA {
			r := rec.SimRecord
			assert.Positive(t, r.WaitP99us, "%s P=%d", rec.Kernel, rec.Procs)
			assert.Less(t, r.WaitP99us, r.ResponseP99us, "the wait is part of the response")
		}
	}
	assert.Equal(t, map[string]int{kindSimCosts: 1, kindSim: 2 * 2 * 2, kindSimWTA: 2 * 2}, kinds)

	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, "# test\n\n", res))
	for _, f := range []string{"sim-stretch.png", "sim-response.png", "sim-speedup.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var raw struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal(data, &raw))
	for _, rec := range raw.Records {
		if rec["kind"] == kindSim {
			for _, f := range []string{"kernel", "procs", "criterion", "stretch", "expected", "response_p99_us", "idle_fraction", "speedup", "bound_speedup"} {
				assert.Contains(t, rec, f)
			}
		}
	}
	md := Markdown(res)
	assert.Equal(t, 5, strings.Count(md, "## Simulation"))
	assert.Contains(t, md, "| fib | 8 | 50-25-25 |")
}

func TestSimNotDefault(t *testing.T) {
	assert.NotContains(t, Experiments, "sim", "the default suite must stay short")
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"sim", "nosuch"}
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "sim")
}

// A run with almost no arrivals has settings in which no interactive
// thread ended: the table shows a dash there instead of failing, and the
// seed, recorded with the results, changes the schedules.
func TestSimSeedAndQuietRuns(t *testing.T) {
	run := func(seed uint64, rate float64) *Results {
		cfg := tinyConfig(t)
		cfg.Experiments = []string{"sim"}
		cfg.Kernels = lookup(t, "fib")
		cfg.Procs = []int{2}
		cfg.SimRate, cfg.SimSeed = rate, seed
		require.NoError(t, cfg.Validate())
		res, err := Run(cfg)
		require.NoError(t, err)
		return res
	}
	digests := func(res *Results) (d []string) {
		for _, rec := range res.Records {
			if rec.SimRecord != nil {
				d = append(d, rec.SimRecord.Digest)
			}
		}
		return d
	}
	assert.NotEqual(t, digests(run(7, 0)), digests(run(8, 0)))
	a := run(7, 0.001)
	assert.Equal(t, uint64(7), a.SimSeed)
	for _, rec := range a.Records {
		if rec.Kind == kindSimWTA {
			assert.Zero(t, rec.SimRecord.Responses)
		}
	}
	assert.Contains(t, Markdown(a), "| — |")
	assert.Contains(t, Markdown(a), "seed 7")
}
