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
