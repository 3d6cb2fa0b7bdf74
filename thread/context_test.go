package thread_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

type ctxKey struct{}

// Every kind of child sees the context of the thread that started it: a
// spawned thread, a promoted Fork2 half, a split For range, a detached one.
func TestContextInherited(t *testing.T) {
	_, p, c := three(t, 50, 25, 25)
	rt := newRT(t, 2, c)
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-7")
	seen := func(c *thread.Ctx) bool { return c.Context().Value(ctxKey{}) == "request-7" }

	ok, err := thread.RunContext(ctx, rt, p[2], func(c *thread.Ctx) bool {
		all := seen(c)
		h := thread.Spawn(c, p[0], func(c *thread.Ctx) bool { return seen(c) })
		var forks atomic.Int64
		var leaf func(*thread.Ctx, int) int
		leaf = func(c *thread.Ctx, n int) int {
			if !seen(c) {
				forks.Add(1)
			}
			if n < 2 {
				return n
			}
			a, b := thread.Fork2(c, leaf, n-1, n-2)
			return a + b
		}
		leaf(c, 20)
		var loop atomic.Int64
		require.NoError(t, thread.For(c, 0, 100000, func(c *thread.Ctx, i int) {
			if !seen(c) {
				loop.Add(1)
			}
		}))
		done := make(chan bool, 1)
		thread.Detach(c, p[1], func(c *thread.Ctx) { done <- seen(c) })
		child, err := thread.Join(c, h)
		require.NoError(t, err)
		return all && child && forks.Load() == 0 && loop.Load() == 0 && thread.Await(c, func() bool { return <-done })
	})
	require.NoError(t, err)
	assert.True(t, ok)

	bg, err := thread.Run(rt, p[0], func(c *thread.Ctx) context.Context { return c.Context() })
	require.NoError(t, err)
	assert.Equal(t, context.Background(), bg, "a thread started without a context has Background")
}

// A Join waiting for a child that runs elsewhere returns the context's
// error when the context is cancelled; the child goes on, and a Join after
// it finished returns its result.
func TestJoinCancelled(t *testing.T) {
	for _, procs := range []int{1, 2} {
		_, p, c := three(t, 50, 25, 25)
		rt := newRT(t, procs, c)
		ctx, cancel := context.WithCancel(context.Background())
		started, release := make(chan struct{}), make(chan struct{})
		res, err := thread.GoContext(ctx, rt, p[1], func(c *thread.Ctx) error {
			h := thread.Spawn(c, p[0], func(c *thread.Ctx) int {
				close(started)
				thread.Await(c, func() struct{} { <-release; return struct{}{} })
				return 42
			})
			thread.Await(c, func() struct{} { <-started; return struct{}{} })
			time.AfterFunc(10*time.Millisecond, cancel)
			if _, err := thread.Join(c, h); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("Join while cancelled: %v", err)
			}
			if err := thread.Sleep(c, time.Hour); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("Sleep in a cancelled thread: %v", err)
			}
			close(release)
			thread.Await(c, func() struct{} {
				for !h.Done() {
					time.Sleep(time.Millisecond)
				}
				return struct{}{}
			})
			if v, err := thread.Join(c, h); v != 42 || err != nil {
				return fmt.Errorf("Join of the finished child: %d, %v", v, err)
			}
			return nil
		}).Wait()
		require.NoError(t, err, "P=%d", procs)
		require.NoError(t, res, "P=%d", procs)
	}
}

// Sleep and AwaitContext return the context's error as soon as it is
// done, and WaitContext stops waiting.
func TestWaitsEndWithContext(t *testing.T) {
	_, p, c := three(t, 50, 25, 25)
	rt := newRT(t, 2, c)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	slept, err := thread.RunContext(ctx, rt, p[0], func(c *thread.Ctx) error { return thread.Sleep(c, time.Hour) })
	require.NoError(t, err)
	require.ErrorIs(t, slept, context.DeadlineExceeded, "Sleep ends with the context")
	release := make(chan struct{})
	defer close(release)
	blocked := thread.Go(rt, p[0], func(c *thread.Ctx) int {
		return thread.Await(c, func() int { <-release; return 0 })
	})
	_, err = blocked.WaitContext(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "WaitContext gives up with its context")

	ctx, cancel = context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	hang := make(chan struct{})
	defer close(hang)
	h := thread.GoContext(ctx, rt, p[2], func(c *thread.Ctx) int {
		_, err := thread.AwaitContext(c, func(ctx context.Context) (int, error) {
			<-hang // a call that ignores its context
			return 1, nil
		})
		stopped <- err
		return 0
	})
	time.AfterFunc(10*time.Millisecond, cancel)
	require.ErrorIs(t, <-stopped, context.Canceled)
	_, err = h.Wait()
	require.NoError(t, err)
}

// A panic in a call that AwaitContext gave up on reaches Config.OnPanic.
func TestAwaitContextLatePanic(t *testing.T) {
	reported := make(chan any, 1)
	o := fairness.NewOrder()
	rt, err := runtime.New(runtime.Config{Procs: 1, Order: o, OnPanic: func(_ fairness.Priority, v any, _ []byte) { reported <- v }})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close()) }()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	res, err := thread.RunContext(ctx, rt, o.Top(), func(c *thread.Ctx) error {
		time.AfterFunc(5*time.Millisecond, cancel)
		_, err := thread.AwaitContext(c, func(context.Context) (int, error) {
			<-release
			panic("late")
		})
		return err
	})
	require.NoError(t, err)
	require.ErrorIs(t, res, context.Canceled)
	close(release)
	assert.Equal(t, "late", <-reported)
}

// AwaitContext returns an error, so a panic in its function comes back as
// a *PanicError, and the thread goes on, with or without a context that can
// be cancelled (two paths: f runs on the thread's goroutine or on one of its
// own); a runtime.Goexit on AwaitContext's goroutine gives ErrGoexit. None of
// these reaches Config.OnPanic.
func TestAwaitContextPanic(t *testing.T) {
	reported := make(chan any, 4)
	o := fairness.NewOrder()
	rt, err := runtime.New(runtime.Config{Procs: 1, Order: o, OnPanic: func(_ fairness.Priority, v any, _ []byte) { reported <- v }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), ctx} {
		res, err := thread.RunContext(ctx, rt, o.Top(), func(c *thread.Ctx) []error {
			_, panicked := thread.AwaitContext(c, func(context.Context) (int, error) { panic("boom") })
			v, after := thread.AwaitContext(c, func(context.Context) (int, error) { return 7, nil })
			if v != 7 {
				after = fmt.Errorf("AwaitContext after a panic gave %d", v)
			}
			return []error{panicked, after}
		})
		require.NoError(t, err)
		var pe *thread.PanicError
		require.ErrorAs(t, res[0], &pe)
		assert.Equal(t, "boom", pe.Value)
		assert.Contains(t, string(pe.Stack), "TestAwaitContextPanic")
		assert.NoError(t, res[1], "the thread goes on after the panic")
	}
	res, err := thread.RunContext(ctx, rt, o.Top(), func(c *thread.Ctx) error {
		_, err := thread.AwaitContext(c, func(context.Context) (int, error) { goruntime.Goexit(); return 0, nil })
		return err
	})
	require.NoError(t, err)
	assert.ErrorIs(t, res, thread.ErrGoexit)
	require.NoError(t, rt.Close())
	assert.Empty(t, reported, "a panic that AwaitContext returned is not reported again")
}

// Misuse of the context API fails clearly.
func TestContextMisuse(t *testing.T) {
	rt := newRT(t, 1, nil)
	top := rt.Order().Top()
	//lint:ignore SA1012 a nil context is the misuse under test
	_, err := thread.RunContext(nil, rt, top, func(*thread.Ctx) int { return 0 }) //nolint:staticcheck
	assert.ErrorIs(t, err, thread.ErrNilContext)
	_, err = thread.Go(rt, top, func(*thread.Ctx) int { return 0 }).WaitContext(nil) //nolint:staticcheck
	assert.ErrorIs(t, err, thread.ErrNilContext)
	v, err := thread.Run(rt, top, func(c *thread.Ctx) error {
		_, err := thread.AwaitContext[int](c, nil)
		return err
	})
	require.NoError(t, err)
	assert.ErrorIs(t, v, thread.ErrNilFunction)
}

// Many threads with contexts cancelled at random moments: every child runs
// exactly once, every Join returns either the child's result or the
// context's error, and Close finds nothing left behind.
func TestStressCancellation(t *testing.T) {
	_, p, c := three(t, 50, 25, 25)
	rt := newRT(t, 4, c)
	const roots, kids = 200, 16
	var ran [roots * kids]atomic.Int32
	var wg sync.WaitGroup
	for r := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(time.Duration(r%7)*100*time.Microsecond, cancel)
			_, err := thread.RunContext(ctx, rt, p[r%3], func(c *thread.Ctx) error {
				hs := make([]*thread.Handle[int], kids)
				for k := range hs {
					id := r*kids + k
					hs[k] = thread.Spawn(c, p[k%2], func(c *thread.Ctx) int {
						ran[id].Add(1)
						if k%3 == 0 {
							thread.Sleep(c, 200*time.Microsecond)
						}
						return id
					})
				}
				for k, h := range hs {
					v, err := thread.Join(c, h)
					if err == nil && v != r*kids+k {
						return fmt.Errorf("child %d returned %d", r*kids+k, v)
					}
					if err != nil && !errors.Is(err, context.Canceled) {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, rt.Close(), "Close waits for the children that outlived their Join")
	for id := range ran {
		assert.Equal(t, int32(1), ran[id].Load(), "child %d", id)
	}
}
