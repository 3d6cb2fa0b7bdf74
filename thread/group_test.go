package thread_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Fork is Spawn at the caller's priority.
func TestFork(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	v, err := thread.Run(rt, ps[1], func(c *thread.Ctx) int {
		h := thread.Fork(c, func(c *thread.Ctx) int { return fib(c, 15) })
		assert.Equal(t, ps[1], h.Priority())
		v, err := thread.Join(c, h)
		require.NoError(t, err)
		return v
	})
	require.NoError(t, err)
	assert.Equal(t, 610, v)
}

// A zero Group runs its parts, those its parts start too, and Wait returns
// nil once all have returned.
func TestGroupAllSucceed(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	var sum atomic.Int64
	err, runErr := thread.Run(rt, ps[2], func(c *thread.Ctx) error {
		var g thread.Group
		for i := range 20 {
			g.Go(c, func(c *thread.Ctx) error {
				assert.Equal(t, ps[2], c.Priority())
				g.Go(c, func(c *thread.Ctx) error { // a part starts another
					sum.Add(int64(fib(c, 10)))
					return nil
				})
				sum.Add(int64(i))
				return nil
			})
		}
		return g.Wait(c)
	})
	require.NoError(t, runErr)
	require.NoError(t, err)
	assert.Equal(t, int64(20*55+190), sum.Load())
}

// The first error is Wait's, and it cancels the others' context with that
// error as the cause.
func TestGroupFirstErrorCancels(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	boom := errors.New("boom")
	var cause atomic.Value
	err, runErr := thread.Run(rt, ps[1], func(c *thread.Ctx) error {
		var g thread.Group
		for range 3 {
			g.Go(c, func(c *thread.Ctx) error {
				err := thread.Sleep(c, time.Hour) // ends when the group fails
				cause.Store(context.Cause(c.Context()))
				return err
			})
		}
		g.Go(c, func(*thread.Ctx) error { return boom })
		return g.Wait(c)
	})
	require.NoError(t, runErr)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, boom, cause.Load())
}

// A panic in a part fails the group with a *PanicError and cancels the
// others; a second panic, which Wait cannot return, reaches OnPanic.
func TestGroupPanic(t *testing.T) {
	o := fairness.NewOrder()
	p := o.New("only")
	reported := make(chan any, 2)
	rt, err := runtime.New(runtime.Config{Procs: 2, Order: o, OnPanic: func(_ fairness.Priority, v any, _ []byte) { reported <- v }})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close()) }()

	err, runErr := thread.Run(rt, p, func(c *thread.Ctx) error {
		var g thread.Group
		g.Go(c, func(c *thread.Ctx) error {
			if err := thread.Sleep(c, time.Hour); err == nil {
				return errors.New("not cancelled")
			}
			panic("second")
		})
		g.Go(c, func(*thread.Ctx) error { panic("first") })
		return g.Wait(c)
	})
	require.NoError(t, runErr)
	var pe *thread.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "first", pe.Value)
	assert.NotEmpty(t, pe.Stack)
	assert.Equal(t, "second", <-reported)
}

// A nil function fails the group with ErrNilFunction, as For and Map do.
func TestGroupNilFunction(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 1, c)
	err, runErr := thread.Run(rt, ps[0], func(c *thread.Ctx) error {
		var g thread.Group
		g.Go(c, func(*thread.Ctx) error { return nil })
		g.Go(c, nil)
		return g.Wait(c)
	})
	require.NoError(t, runErr)
	assert.ErrorIs(t, err, thread.ErrNilFunction)

	err, runErr = thread.Run(rt, ps[0], func(c *thread.Ctx) error {
		var g thread.Group
		return g.Wait(c) // nothing started
	})
	require.NoError(t, runErr)
	assert.NoError(t, err)
}

// When the waiting thread's context is cancelled, the parts see it, and
// Wait returns only once they all have.
func TestGroupParentCancelled(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	ctx, cancel := context.WithCancel(context.Background())
	var returned atomic.Int32
	err, runErr := thread.RunContext(ctx, rt, ps[2], func(c *thread.Ctx) error {
		var g thread.Group
		for range 4 {
			g.Go(c, func(c *thread.Ctx) error {
				defer returned.Add(1)
				return thread.Sleep(c, time.Hour)
			})
		}
		cancel()
		return g.Wait(c)
	})
	require.NoError(t, runErr)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(4), returned.Load())
}

// A thread of higher priority may not wait for the group's parts: Wait
// says so, as Join does.
func TestGroupWaitInversion(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	err, runErr := thread.Run(rt, ps[2], func(c *thread.Ctx) error {
		var g thread.Group
		g.Go(c, func(*thread.Ctx) error { return nil })
		h := thread.Spawn(c, ps[0], func(c *thread.Ctx) error { return g.Wait(c) })
		err, _ := thread.Join(c, h)
		return err
	})
	require.NoError(t, runErr)
	assert.ErrorIs(t, err, thread.ErrIncompatiblePriorities)
}
