package thread_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// closePatience bounds how long a test waits for Close: a hang detector,
// never a timing goal.
const closePatience = 20 * time.Second

// closeWithin closes rt and fails the test if Close hangs.
func closeWithin(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(closePatience):
		t.Fatal("Close hangs")
	}
}

// twoLevels is an order lo < hi with equal shares.
func twoLevels(t testing.TB) (hi, lo fairness.Priority, c *fairness.Criterion) {
	t.Helper()
	o := fairness.NewOrder()
	hi, lo = o.New("hi"), o.New("lo")
	require.NoError(t, o.Less(lo, hi))
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 1, lo: 1})
	require.NoError(t, err)
	return hi, lo, c
}

// A thread started with Go and joined by another thread before it started
// runs inline on the joiner; Close must still return. The sequence is a
// user's: a low-priority thread yields in a loop, a high one sleeps, and a
// child of a Run joins the sleeper's handle.
func TestCloseAfterJoinOfGoHandle(t *testing.T) {
	hi, lo, c := twoLevels(t)
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: c})
	require.NoError(t, err)
	for i := range 10 {
		l := thread.Go(rt, lo, func(c *thread.Ctx) int {
			for start := time.Now(); time.Since(start) < 3*time.Millisecond; {
				thread.Yield(c)
			}
			return 0
		})
		g := thread.Go(rt, hi, func(c *thread.Ctx) int {
			assert.NoError(t, thread.Sleep(c, time.Duration(100+i%5*100)*time.Microsecond))
			return 1
		})
		v, err := thread.Run(rt, hi, func(c *thread.Ctx) int {
			child := thread.Spawn(c, hi, func(c *thread.Ctx) int {
				v, err := thread.Join(c, g)
				assert.NoError(t, err)
				return v
			})
			v, err := thread.Join(c, child)
			assert.NoError(t, err)
			return v
		})
		require.NoError(t, err)
		require.Equal(t, 1, v)
		_, err = l.Wait()
		require.NoError(t, err)
	}
	closeWithin(t, rt)
}
