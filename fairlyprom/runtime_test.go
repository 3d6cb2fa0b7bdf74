package fairlyprom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairlyprom"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return fib(c, n-1) })
	b := fib(c, n-2)
	a, _ := thread.Join(c, h)
	return a + b
}

// newRuntime gives a runtime of two workers with priorities ui > batch,
// shares 75 and 25.
func newRuntime(t *testing.T) (rt *runtime.Runtime, ui, batch fairness.Priority) {
	o := fairness.NewOrder()
	ui, batch = o.New("ui"), o.New("batch")
	require.NoError(t, o.Less(batch, ui))
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 75, batch: 25})
	require.NoError(t, err)
	rt, err = runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	require.NoError(t, err)
	return rt, ui, batch
}

// The collector exports what Stats says after real threads ran.
func TestRuntimeCollectorExportsStats(t *testing.T) {
	rt, ui, batch := newRuntime(t)
	h := thread.Go(rt, batch, func(c *thread.Ctx) int { return fib(c, 22) })
	for range 20 {
		v, err := thread.Run(rt, ui, func(c *thread.Ctx) int { return fib(c, 12) })
		require.NoError(t, err)
		require.Equal(t, 144, v)
	}
	v, err := h.Wait()
	require.NoError(t, err)
	require.Equal(t, 17711, v)
	require.NoError(t, rt.Close()) // the counters stop moving
	s := rt.Stats()

	c := fairlyprom.NewRuntimeCollector(rt)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems, "metric names and help follow Prometheus' conventions")
	assert.Equal(t, 2+4*len(s.Priorities)+9, testutil.CollectAndCount(c))

	const shares = `
# HELP fairly_runtime_procs Workers of the runtime: threads that run at once.
# TYPE fairly_runtime_procs gauge
fairly_runtime_procs 2
# HELP fairly_runtime_share_ratio Share of processor time the fairness criterion gives the priority, F(p).
# TYPE fairly_runtime_share_ratio gauge
fairly_runtime_share_ratio{priority="batch"} 0.25
fairly_runtime_share_ratio{priority="bottom"} 0
fairly_runtime_share_ratio{priority="top"} 0
fairly_runtime_share_ratio{priority="ui"} 0.75
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(shares), "fairly_runtime_procs", "fairly_runtime_share_ratio"))

	got := gather(t, c)
	cpuShares := 0.0
	for _, p := range s.Priorities {
		name := p.Priority.String()
		assert.InDelta(t, p.CPU.Seconds(), got[`fairly_runtime_cpu_seconds_total{priority="`+name+`"}`], 1e-9, name)
		assert.InDelta(t, p.CPUShare, got[`fairly_runtime_cpu_share_ratio{priority="`+name+`"}`], 1e-12, name)
		assert.Equal(t, float64(p.PrimaryRounds), got[`fairly_runtime_primary_rounds_total{priority="`+name+`"}`], name)
		cpuShares += got[`fairly_runtime_cpu_share_ratio{priority="`+name+`"}`]
	}
	assert.Positive(t, got[`fairly_runtime_cpu_seconds_total{priority="batch"}`], "batch ran")
	assert.Positive(t, got[`fairly_runtime_cpu_seconds_total{priority="ui"}`], "ui ran")
	assert.InDelta(t, 1, cpuShares, 1e-9, "the measured shares add up to one")
	assert.Positive(t, got["fairly_runtime_rounds_total"])
	assert.GreaterOrEqual(t, got["fairly_runtime_uptime_seconds"], s.Elapsed.Seconds())
	for name, want := range map[string]uint64{
		"fairly_runtime_rounds_total":         s.Rounds,
		"fairly_runtime_deals_sent_total":     s.DealsSent,
		"fairly_runtime_deals_received_total": s.DealsReceived,
		"fairly_runtime_requests_total":       s.Requests,
		"fairly_runtime_donations_total":      s.Donations,
		"fairly_runtime_preemptions_total":    s.Preemptions,
		"fairly_runtime_rescues_total":        s.Rescues,
		"fairly_runtime_seizures_total":       s.Seizures,
		"fairly_runtime_promotions_total":     s.Promotions,
	} {
		assert.Equal(t, float64(want), got[name], name)
	}
}

// Two priorities of the same name get labels that differ.
func TestRuntimeCollectorSameNames(t *testing.T) {
	o := fairness.NewOrder()
	a, b := o.New("batch"), o.New("batch")
	require.NoError(t, o.Less(a, b))
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{a: 1, b: 3})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	got := gather(t, fairlyprom.NewRuntimeCollector(rt))
	var shares []float64
	for k, v := range got {
		if strings.HasPrefix(k, `fairly_runtime_share_ratio{priority="batch#`) {
			shares = append(shares, v)
		}
	}
	assert.ElementsMatch(t, []float64{0.25, 0.75}, shares)
}
