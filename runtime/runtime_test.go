package runtime_test

import (
	"errors"
	"math"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfigErrors(t *testing.T) {
	o := fairness.NewOrder()
	other := fairness.NewOrder()
	oc := fairness.Uniform(other)
	for name, cfg := range map[string]runtime.Config{
		"negative procs":     {Procs: -1},
		"negative quantum":   {RoundQuantum: -time.Millisecond},
		"negative deal":      {DealInterval: -1},
		"negative tick":      {Interrupt: -1},
		"negative budget":    {PromptBudget: -1},
		"huge quantum":       {RoundQuantum: runtime.MaxDuration + 1},
		"huge deal":          {DealInterval: math.MaxInt64},
		"huge tick":          {Interrupt: math.MaxInt64},
		"huge budget":        {PromptBudget: runtime.MaxDuration + 1},
		"criterion mismatch": {Order: o, Criterion: oc},
	} {
		_, err := runtime.New(cfg)
		assert.True(t, errors.Is(err, runtime.ErrInvalidConfig), "%s: %v", name, err)
	}
}

func TestDefaults(t *testing.T) {
	rt, err := runtime.New(runtime.Config{Procs: 3})
	require.NoError(t, err)
	defer rt.Close()
	assert.Equal(t, 3, rt.Procs())
	assert.Equal(t, 2, len(rt.Order().Freeze()), "only Top and Bottom")
	_, err = rt.Rank(rt.Order().Top())
	require.NoError(t, err)
	_, err = rt.Rank(fairness.NewOrder().Top())
	assert.ErrorIs(t, err, fairness.ErrForeignPriority)
}

func TestSetCriterion(t *testing.T) {
	o := fairness.NewOrder()
	a := o.New("a")
	c1, err := fairness.NewCriterion(o, map[fairness.Priority]float64{a: 1})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: c1})
	require.NoError(t, err)
	c2, err := fairness.NewCriterion(o, map[fairness.Priority]float64{a: 1, o.Top(): 3})
	require.NoError(t, err)
	require.NoError(t, rt.SetCriterion(c2))
	assert.Same(t, c2, rt.Criterion())
	assert.ErrorIs(t, rt.SetCriterion(nil), runtime.ErrInvalidConfig)
	assert.ErrorIs(t, rt.SetCriterion(fairness.Uniform(fairness.NewOrder())), runtime.ErrInvalidConfig)
	st := rt.Stats()
	require.Len(t, st.Priorities, 3)
	assert.InDelta(t, 0.75, st.Priorities[2].Share, 1e-9, "Top has the highest rank")
	require.NoError(t, rt.Close())
	assert.ErrorIs(t, rt.SetCriterion(c1), runtime.ErrClosed)
}

func TestCloseIdleReleasesEverything(t *testing.T) {
	for range 20 {
		rt, err := runtime.New(runtime.Config{Procs: 4})
		require.NoError(t, err)
		require.NoError(t, rt.Close())
	}
	goleak.VerifyNone(t)
}

// A nil or zero Runtime fails clearly instead of crashing, here and in
// package thread (ErrNilRuntime).
func TestZeroRuntime(t *testing.T) {
	for _, rt := range []*runtime.Runtime{nil, {}} {
		assert.ErrorIs(t, rt.Close(), runtime.ErrNotStarted)
		assert.ErrorIs(t, rt.SetCriterion(nil), runtime.ErrNotStarted)
		assert.Zero(t, rt.Procs())
		assert.Nil(t, rt.Order())
		assert.Nil(t, rt.Criterion())
		assert.Zero(t, rt.Stats().Procs)
	}
}

// New raises GOMAXPROCS to Procs+1 but never lowers it, so a program can
// keep more Ps free (docs/tuning.md, blocking calls beside fairly); Close
// gives back what the program had.
func TestGOMAXPROCSOnlyRaised(t *testing.T) {
	base := goruntime.GOMAXPROCS(0)
	defer goruntime.GOMAXPROCS(base)
	for _, c := range []struct{ set, procs, want int }{
		{set: 1, procs: 2, want: 3}, // raised to Procs+1
		{set: 6, procs: 2, want: 6}, // already higher: left alone
		{set: 3, procs: 2, want: 3}, // exactly Procs+1
	} {
		goruntime.GOMAXPROCS(c.set)
		rt, err := runtime.New(runtime.Config{Procs: c.procs})
		require.NoError(t, err)
		assert.Equal(t, c.want, goruntime.GOMAXPROCS(0), "GOMAXPROCS %d, Procs %d", c.set, c.procs)
		require.NoError(t, rt.Close())
		assert.Equal(t, c.set, goruntime.GOMAXPROCS(0), "after Close")
	}
}
