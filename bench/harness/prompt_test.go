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

	controls := 3 // plain for each load
	if canIdleThreads {
		controls += 3 + 1 // floor for each load, floor-alloc for the kernel
	}
	require.Len(t, res.Records, 1+3*2+controls, "the idle echo, each load under each criterion, and the controls")
	idle := res.Records[0]
	assert.Equal(t, kindPromptIdle, idle.Kind)
	require.NotNil(t, idle.PromptSummary)
	var cells, ctls []*Record
	for _, rec := range res.Records[1:] {
		if rec.Kind == kindPromptControl {
			ctls = append(ctls, rec)
		} else {
			cells = append(cells, rec)
		}
	}
	require.Len(t, ctls, controls)
	for _, rec := range res.Records[len(res.Records)-3:] {
		assert.Equal(t, controlPlain, rec.PromptSummary.Control, "the plain controls run last")
	}
	for _, rec := range ctls {
		what := rec.Kernel + " control"
		assert.Equal(t, kindPromptControl, rec.Kind, what)
		require.NotNil(t, rec.PromptSummary, what)
		sum := rec.PromptSummary
		assert.Contains(t, []string{controlPlain, controlFloor, controlFloorAlloc}, sum.Control, what)
		assert.Equal(t, rec.Kernel, sum.Load, what)
		assert.Empty(t, rec.Criterion, what)
		assert.GreaterOrEqual(t, sum.Requests, cfg.PromptRequests, what)
		assert.Equal(t, rec.PhaseRequests[phaseMeasured], sum.Requests+sum.Lost, what)
		assert.LessOrEqual(t, sum.P50, sum.P99, what)
		assert.LessOrEqual(t, sum.P999, sum.Max, what)
		assert.NotNil(t, rec.Collector, what)
		assert.Same(t, sum, promptControlOf(res, rec.Kernel, 1, sum.Control), what)
	}
	assert.Equal(t, 16, res.find(Record{Kind: kindPromptControl, Kernel: "fib"}).Size, "at PromptSizes")
	if canIdleThreads {
		// The kernel's fairly cells fork with Spawn, whose closures are
		// allocated; floor-alloc allocates toward the faster cell's rate.
		fast := 0.0
		for _, rec := range res.Records {
			if rec.Kind == kindPrompt && rec.Kernel == "fib" {
				assert.Positive(t, rec.PromptSummary.AllocRate, "fib %s allocates", rec.Criterion)
				fast = max(fast, rec.PromptSummary.AllocRate)
			}
		}
		fa := promptControlOf(res, "fib", 1, controlFloorAlloc)
		require.NotNil(t, fa, "floor-alloc ran beside the kernel")
		assert.Nil(t, promptControlOf(res, "alloc", 1, controlFloorAlloc), "not beside a load of PromptLoads")
		// Not a timing goal: the top-up runs on an idle-class thread, so
		// only what it owes bounds it, from above.
		assert.Positive(t, fa.AllocRate, "floor-alloc allocated")
		assert.Greater(t, fast, 0.0)
	}
	for _, rec := range cells {
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
	n, nc := 0, 0
	for _, r := range raw.Records {
		switch r["kind"] {
		case kindPrompt:
			n++
			for _, f := range []string{"kernel", "load", "procs", "criterion", "requests", "p50_ms", "p99_ms", "p999_ms", "max_ms", "idle_p99_ms", "ratio",
				"delivery_p99_ms", "fairly_p99_ms", "reply_p99_ms", "gc_cycles", "gc_max_pause_ms", "gomaxprocs_changes", "phase_requests",
				"batch_fib_per_s", "hash_mib_per_s", "alloc_mib_per_s"} {
				assert.Contains(t, r, f)
			}
			assert.NotContains(t, r, "control")
		case kindPromptControl:
			nc++
			for _, f := range []string{"load", "procs", "control", "requests", "p50_ms", "p99_ms", "p999_ms", "max_ms", "delivery_p99_ms"} {
				assert.Contains(t, r, f)
			}
		}
	}
	assert.Equal(t, 6, n)
	assert.Equal(t, controls, nc)

	tbs := tables(Markdown(res))
	if canIdleThreads {
		require.Len(t, tbs, 4, "the cells, the cells beside the controls, the goal, and the batch's work")
		g := tbs[2]
		require.Len(t, g[2:], 3, "fairly and the two floors")
		assert.Equal(t, []string{"fairly", "6"}, g[2][:2])
		assert.Equal(t, []string{"floor Go", "3"}, g[3][:2])
		assert.Equal(t, []string{"floor-alloc Go", "1"}, g[4][:2])
		assert.Regexp(t, `^\d+(: |$)`, g[2][7], "fairly's misses beyond the floors")
	} else {
		require.Len(t, tbs, 3, "the cells, the cells beside the controls, and the batch's work")
	}
	// What batch+1go got done: fairly's two cells, then its controls.
	w := tbs[len(tbs)-1]
	assert.Equal(t, []string{"load", "P", "criterion", "echo p99 (ms)", "batch fib(n)/s", "÷ batch alone", "hashing MiB/s"}, w[0])
	want := []string{"100-0-0", "50-25-25"}
	if canIdleThreads {
		want = append(want, "floor Go")
	}
	want = append(want, "plain Go")
	require.Len(t, w[2:], len(want), "a row per cell and control of batch+1go")
	for i, row := range w[2:] {
		assert.Equal(t, []string{"batch+1go", "1", want[i]}, row[:3])
		assert.NotEqual(t, "—", row[6], "the goroutine's hashing at %s", want[i])
	}
	ran := false
	for _, rec := range res.Records {
		if sum := rec.PromptSummary; rec.Kernel == "batch+1go" {
			assert.Positive(t, sum.HashRate, "the ordinary goroutine hashed at %s%s", rec.Criterion, sum.Control)
			ran = ran || (rec.Kind == kindPrompt && sum.BatchRate > 0)
		} else {
			assert.Zero(t, sum.BatchRate+sum.HashRate, "no batch at %s", rec.Kernel)
		}
	}
	assert.True(t, ran, "fairly's batch computed fib in a cell of batch+1go")
	assert.Equal(t, "p99 ÷ idle", tbs[0][0][9])
	assert.Equal(t, "allocated (MiB/s)", tbs[0][0][15])
	assert.Len(t, tbs[0][2:], 1+6+controls)
	vs := tbs[1]
	assert.Equal(t, []string{"load", "P", "plain p99 (ms)", "floor p99 (ms)", "bound (ms)", "100-0-0 p99 (ms)", "50-25-25 p99 (ms)", "cells passed"}, vs[0])
	require.Len(t, vs[2:], 3, "a row per load and P")
	for _, row := range vs[2:] {
		assert.NotEqual(t, "—", row[2], "plain ran at %s", row[0])
		assert.Regexp(t, `^\d+/2$`, row[7])
	}

	c := cfg
	c.PromptNoControls = true
	for _, st := range (&suite{cfg: &c}).promptSteps() {
		assert.NotContains(t, st.name, "plain", "PromptNoControls")
		assert.NotContains(t, st.name, "floor", "PromptNoControls")
	}
}

// TestPromptVerdict checks the rule a fairly cell is judged by: at most
// max(1 ms, the floor's p99), and never above the plain control's p99.
func TestPromptVerdict(t *testing.T) {
	plain := &PromptSummary{Requests: 2000, P99: 30}
	floor := &PromptSummary{Requests: 2000, P99: 4}
	for _, c := range []struct {
		p99          float64
		plain, floor *PromptSummary
		why          []string
	}{
		{0.8, plain, floor, nil},
		{3.9, plain, floor, nil},
		{5, plain, floor, []string{"bound"}},
		{0.9, nil, nil, nil},
		{1.1, nil, nil, []string{"bound"}},
		{0.9, &PromptSummary{Requests: 2000, P99: 0.5}, floor, []string{"plain"}},
		{40, plain, floor, []string{"bound", "plain"}},
		{3, plain, &PromptSummary{}, []string{"bound"}}, // a floor without requests sets no bound
	} {
		ok, why := promptVerdict(c.p99, c.plain, c.floor)
		assert.Equal(t, c.why, why, "p99 %v", c.p99)
		assert.Equal(t, len(c.why) == 0, ok, "p99 %v", c.p99)
	}
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

// TestPromptGoalTable counts the goal's parts for fairly's cells and the
// floor's: p99 ≤ 1 ms, ≤ 2× the idle p99 at the same P, fairly's part
// ≤ 0.2 ms.
func TestPromptGoalTable(t *testing.T) {
	res := &Results{}
	add := func(kind, load, crit, control string, p99, part float64) {
		res.Records = append(res.Records, &Record{Kind: kind, Kernel: load, Procs: 1, Criterion: crit,
			PromptSummary: &PromptSummary{Load: load, Requests: 1000, P99: p99, FairlyP99: part, Control: control}})
	}
	add(kindPromptIdle, "idle", "100-0-0", "", 0.2, 0.01)
	add(kindPrompt, "fib", "100-0-0", "", 0.3, 0.05)  // the whole goal
	add(kindPrompt, "fib", "50-0-50", "", 0.5, 0.05)  // over 2× idle
	add(kindPrompt, "alloc", "100-0-0", "", 1.2, 0.1) // over 1 ms and 2× idle
	add(kindPrompt, "alloc", "50-0-50", "", 0.3, 0.3) // fairly's part
	assert.Nil(t, promptGoalTable(res), "no floor ran")
	add(kindPromptControl, "fib", "", controlFloor, 0.3, 0)
	add(kindPromptControl, "alloc", "", controlFloor, 0.9, 0)
	add(kindPromptControl, "alloc", "", controlPlain, 30, 0)
	rows := sectionRows(t, promptGoalTable(res))
	require.Len(t, rows, 2, "fairly and the one floor that ran")
	misses := "fib P=1 50-0-50 0.50; alloc P=1 100-0-0 1.20; alloc P=1 50-0-50 0.30"
	assert.Equal(t, []string{"fairly", "4", "3", "2", "3", "1", misses, "1: fib P=1 50-0-50 0.50"}, rows[0], "fib's floor met the goal, alloc's did not")
	assert.Equal(t, []string{"floor Go", "2", "2", "1", "—", "1", "alloc P=1 0.90", "—"}, rows[1])

	// A floor that allocates as alloc's cells did and meets the goal: alloc's
	// misses are beyond a floor too. One that misses changes nothing: a
	// floor that met the goal shows that Go reached it.
	add(kindPromptControl, "fib", "", controlFloorAlloc, 0.45, 0)
	add(kindPromptControl, "alloc", "", controlFloorAlloc, 0.3, 0)
	rows = sectionRows(t, promptGoalTable(res))
	require.Len(t, rows, 3)
	assert.Equal(t, []string{"fairly", "4", "3", "2", "3", "1", misses, "3: " + misses}, rows[0])
	assert.Equal(t, []string{"floor-alloc Go", "2", "2", "1", "—", "1", "fib P=1 0.45", "—"}, rows[2])
}

// TestPromptBatchTable sets each batch load's rate against the batch
// load's under the same criterion or control at the same P, fairly's
// cells before the floor's and plain Go's.
func TestPromptBatchTable(t *testing.T) {
	res := &Results{}
	add := func(kind, load, crit, control string, procs int, fibs, mib float64) {
		res.Records = append(res.Records, &Record{Kind: kind, Kernel: load, Procs: procs, Criterion: crit,
			PromptSummary: &PromptSummary{Load: load, Requests: 1000, P99: 0.5, Control: control, BatchRate: fibs, HashRate: mib}})
	}
	add(kindPrompt, "alloc", "100-0-0", "", 1, 0, 0)
	assert.Nil(t, promptBatchTable(res), "no batch load ran")
	add(kindPromptIdle, "idle", "", "", 1, 0, 0)
	add(kindPrompt, "batch", "100-0-0", "", 1, 40, 0)
	add(kindPrompt, "batch+2go", "100-0-0", "", 1, 10, 2000)
	add(kindPrompt, "batch+2go", "100-0-0", "", 2, 10, 2000) // no batch at P = 2
	add(kindPromptControl, "batch+2go", "", controlPlain, 1, 30, 1000)
	add(kindPromptControl, "batch+2go", "", controlFloor, 1, 8, 3000)
	add(kindPromptControl, "batch", "", controlFloor, 1, 80, 0)
	rows := sectionRows(t, promptBatchTable(res))
	require.Len(t, rows, 6)
	assert.Equal(t, []string{"batch", "1", "100-0-0", "0.50", "40.0", "1.00", "—"}, rows[0])
	assert.Equal(t, []string{"batch", "1", "floor Go", "0.50", "80.0", "1.00", "—"}, rows[1])
	assert.Equal(t, []string{"batch+2go", "1", "100-0-0", "0.50", "10.0", "0.25", "2000"}, rows[2])
	assert.Equal(t, []string{"batch+2go", "1", "floor Go", "0.50", "8.0", "0.10", "3000"}, rows[3])
	assert.Equal(t, []string{"batch+2go", "1", "plain Go", "0.50", "30.0", "—", "1000"}, rows[4], "no plain batch alone")
	assert.Equal(t, []string{"batch+2go", "2", "100-0-0", "0.50", "10.0", "—", "2000"}, rows[5])
}

// sectionRows is the body of a section's table: its rows below the head.
func sectionRows(t *testing.T, s *Section) [][]string {
	t.Helper()
	require.NotNil(t, s)
	return tables("\n" + s.Table)[0][2:]
}
