package engine

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedSelf tells each goroutine of the runtime in thread code from every
// other goroutine, including one that the program locked to its OS thread
// and a thread's goroutine inside an Await-ed call, which may run a thread
// of its own there.
func TestLockedSelf(t *testing.T) {
	rt, lo, hi := levels(t, 2, 50, 50)
	assert.Nil(t, lockedSelf(), "an ordinary goroutine")
	done := make(chan *gor)
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		done <- lockedSelf()
	}()
	assert.Nil(t, <-done, "a goroutine the program locked")

	var self, own, inAwait, nested, back *gor
	var nestedIn bool
	submit(t, rt, lo, func(tk *Task) {
		self = tk.g
		own = lockedSelf()
		tk.Suspend(func() {
			inAwait = lockedSelf()
			inner := &Task{}
			require.NoError(t, inner.Init(rt, hi, fn(func(in *Task) {
				nested = lockedSelf()
				nestedIn = InThread() && nested == in.g
			})))
			ran, err := rt.RunHere(inner, context.Background())
			if err == nil && !ran { // no worker qualified: queued instead
				require.NoError(t, rt.Submit(inner))
				inner.Wait()
			}
		})
		back = lockedSelf()
	}).Wait()
	assert.Same(t, self, own, "thread code finds its own goroutine")
	assert.Nil(t, inAwait, "an Await-ed call holds no thread locked")
	assert.NotNil(t, nested)
	assert.True(t, nestedIn, "a thread run from inside Await finds its own record")
	assert.Same(t, self, back, "back in thread code after Await")
}

// Many ordinary goroutines ask who they are while threads park, resume and
// move between OS threads: none is ever taken for a thread's goroutine, and
// every thread finds its own.
func TestStressLockedSelf(t *testing.T) {
	rt, lo, hi := levels(t, 2, 50, 50)
	const askers, threads, rounds = 4, 8, 2000
	var wrong atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range askers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if lockedSelf() != nil {
					wrong.Add(1)
				}
				goruntime.Gosched()
			}
		})
	}
	var ts []*Task
	for i := range threads {
		p := lo
		if i%2 == 1 {
			p = hi
		}
		ts = append(ts, submit(t, rt, p, func(tk *Task) {
			for j := range rounds {
				if lockedSelf() != tk.g {
					wrong.Add(1)
				}
				if j%3 == 0 {
					tk.Suspend(goruntime.Gosched) // parks, unlocks, may come back elsewhere
				} else {
					tk.Yield()
				}
			}
		}))
	}
	for _, tk := range ts {
		tk.Wait()
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, wrong.Load())
}

// A thread that calls runtime.Goexit in RunHere ends the caller's
// goroutine: no entry may outlive it, or an ordinary goroutine on a later
// OS thread with the same id would be taken for it.
func TestLockedSelfAfterGoexit(t *testing.T) {
	rt, _, hi := levels(t, 1, 50, 50)
	for range 20 {
		got := make(chan *gor, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			inner := &Task{}
			require.NoError(t, inner.Init(rt, hi, fn(func(in *Task) {
				got <- lockedSelf()
				goruntime.Goexit()
			})))
			if ran, err := rt.RunHere(inner, context.Background()); err == nil && !ran {
				got <- nil // no worker qualified: nothing to check this time
			}
		}()
		<-done
		if g := <-got; g != nil {
			assert.NotSame(t, g, locks.load(g.lockKey), "an entry outlived its goroutine")
			assert.Zero(t, g.lockSeq.Load()%2, "still counted as locked")
		}
	}
}
