package thread_test

import (
	"context"
	"sync/atomic"
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

// Close called from a function that a thread awaits fails with ErrInThread
// and does nothing, instead of waiting for the thread that awaits it; so do
// Close in thread code and in AwaitContext's call. The runtime then closes
// as usual.
func TestCloseInsideAwait(t *testing.T) {
	hi, _, c := twoLevels(t)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: c})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan []error, 1)
	go func() {
		res, err := thread.RunContext(ctx, rt, hi, func(c *thread.Ctx) []error {
			inThread := rt.Close()
			inAwait := thread.Await(c, rt.Close)
			inAwaitContext, err := thread.AwaitContext(c, func(context.Context) (error, error) { return rt.Close(), nil })
			return []error{inThread, inAwait, inAwaitContext, err}
		})
		errs <- append(res, err)
	}()
	select {
	case res := <-errs:
		for i, err := range res[:3] {
			assert.ErrorIs(t, err, runtime.ErrInThread, "call %d", i)
		}
		assert.NoError(t, res[3])
		assert.NoError(t, res[4])
	case <-time.After(closePatience):
		t.Fatal("Close inside Await waits for its own thread")
	}
	v, err := thread.Run(rt, hi, func(*thread.Ctx) int { return 1 })
	require.NoError(t, err, "the runtime still runs threads")
	assert.Equal(t, 1, v)
	closeWithin(t, rt)
}

// Run and RunContext called from a thread's code fail with ErrWaitInThread
// before anything runs: their function never runs, and the runtime holds
// nothing of them.
func TestRunInThreadRunsNothing(t *testing.T) {
	hi, lo, c := twoLevels(t)
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: c})
	require.NoError(t, err)
	var ran atomic.Int32
	f := func(*thread.Ctx) int { ran.Add(1); return 1 }
	res, err := thread.Run(rt, lo, func(c *thread.Ctx) []error {
		var errs []error
		for _, p := range []fairness.Priority{hi, lo} {
			_, err := thread.Run(rt, p, f)
			errs = append(errs, err)
			_, err = thread.RunContext(c.Context(), rt, p, f)
			errs = append(errs, err)
		}
		return errs
	})
	require.NoError(t, err)
	for i, err := range res {
		assert.ErrorIs(t, err, thread.ErrWaitInThread, "call %d", i)
	}
	closeWithin(t, rt)
	assert.Zero(t, ran.Load(), "a refused Run ran its function")
}
