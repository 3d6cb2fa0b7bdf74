package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrompt runs the prompt experiment small: one kernel and two loads at
// two criteria and P = 1, and checks its cells, its flat records in
// results.json, its table and its chart. Not its timing.
func TestPrompt(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"prompt"}
	cfg.Kernels = lookup(t, "fib")
	cfg.PromptLoads = []string{"alloc", "batch+1go"}
	cfg.PromptSizes = map[string]int{"fib": 16}
	cfg.PromptCriteria = []Criterion{{100, 0, 0}, {50, 25, 25}}
	cfg.Procs = []int{1}
	cfg.PromptRate, cfg.PromptRequests = 500, 40
	res, err := Run(cfg)
	require.NoError(t, err)
	assert.Equal(t, 500.0, res.PromptRate)
	assert.Equal(t, 40, res.PromptRequests)

	require.Len(t, res.Records, 1+3*2, "the idle echo, then each load under each criterion")
	idle := res.Records[0]
	assert.Equal(t, kindPromptIdle, idle.Kind)
	require.NotNil(t, idle.PromptSummary)
	for _, rec := range res.Records[1:] {
		what := rec.Kernel + " " + rec.Criterion
		assert.Equal(t, kindPrompt, rec.Kind, what)
		require.NotNil(t, rec.PromptSummary, what)
		sum := rec.PromptSummary
		assert.Equal(t, rec.Kernel, sum.Load, what)
		assert.GreaterOrEqual(t, sum.Requests, cfg.PromptRequests, what)
		assert.Equal(t, rec.PhaseRequests[phaseMeasured], sum.Requests+sum.Lost, what)
		assert.NotEmpty(t, rec.Measured, what)
		assert.Equal(t, idle.PromptSummary.P99, sum.IdleP99, what)
		assert.InDelta(t, sum.P99/sum.IdleP99, sum.Ratio, 1e-9, what)
		assert.LessOrEqual(t, sum.P50, sum.P99, what)
		assert.LessOrEqual(t, sum.P99, sum.P999, what)
		assert.LessOrEqual(t, sum.P999, sum.Max, what)
		assert.NotNil(t, rec.EchoParts, what)
		assert.NotNil(t, rec.Collector, what)
	}
	assert.NotEmpty(t, res.find(Record{Kind: kindPrompt, Kernel: "fib", Criterion: "50-25-25"}).Times, "the kernel ran")
	assert.Equal(t, 16, res.find(Record{Kind: kindPrompt, Kernel: "fib", Criterion: "50-25-25"}).Size, "at PromptSizes")

	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, "# test\n", res))
	assert.FileExists(t, filepath.Join(dir, "prompt.png"))
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var raw struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal(data, &raw))
	n := 0
	for _, r := range raw.Records {
		if r["kind"] != kindPrompt {
			continue
		}
		n++
		for _, f := range []string{"kernel", "load", "procs", "criterion", "requests", "p50_ms", "p99_ms", "p999_ms", "max_ms", "idle_p99_ms", "ratio",
			"delivery_p99_ms", "fairly_p99_ms", "reply_p99_ms", "gc_cycles", "gc_max_pause_ms", "gomaxprocs_changes", "phase_requests"} {
			assert.Contains(t, r, f)
		}
	}
	assert.Equal(t, 6, n)

	tbs := tables(Markdown(res))
	require.Len(t, tbs, 1)
	assert.Equal(t, "p99 ÷ idle", tbs[0][0][9])
	assert.Len(t, tbs[0][2:], 7)
}

// TestPromptConfig checks the experiment's settings and their errors.
func TestPromptConfig(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments = []string{"prompt"}
	assert.Equal(t, PromptCriteria, cfg.promptCriteria())
	assert.Equal(t, float64(DefaultPromptRate), cfg.promptRate())
	assert.Equal(t, DefaultPromptRequests, cfg.promptRequests())
	k := lookup(t, "bfs")[0]
	assert.Equal(t, k.DefaultSize, cfg.PromptSize(k), "the default size, whatever Sizes says")
	require.NoError(t, cfg.Validate())

	for _, bad := range []func(*Config){
		func(c *Config) { c.Kernels, c.PromptLoads = nil, nil },
		func(c *Config) { c.PromptLoads = []string{"nope"} },
		func(c *Config) { c.PromptRate = -1 },
		func(c *Config) { c.PromptRequests = maxPromptRequests + 1 },
		func(c *Config) { c.PromptSizes = map[string]int{"fib": 0} },
	} {
		c := tinyConfig(t)
		c.Experiments = []string{"prompt"}
		bad(&c)
		assert.ErrorIs(t, c.Validate(), ErrConfig)
	}
	c := tinyConfig(t)
	c.Experiments, c.Kernels, c.PromptLoads = []string{"prompt"}, nil, []string{"batch"}
	assert.NoError(t, c.Validate(), "loads alone are enough")
}
