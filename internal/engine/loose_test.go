package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLooseResume: a thread of the top rank back from an Await-ed call,
// finding its only worker busy with a thread of the same rank that it may
// not seize, runs on loose (R4) instead of waiting for the worker's next
// point. The busy thread waits for the loose one, so the test would hang
// if the resumed thread were queued; its points keep the worker from
// looking stale. The loose thread then forks (a point: it rejoins and takes
// a token) and awaits again.
func TestLooseResume(t *testing.T) {
	rt, _, hi := levels(t, 1, 50, 50)
	var waiting, started, flag, sawLoose, inThread atomic.Bool
	var ran atomic.Int32
	resumed := submit(t, rt, hi, func(t *Task) {
		t.Suspend(func() {
			waiting.Store(true)
			eventually(started.Load)
		})
		sawLoose.Store(t.g.mode.Load()&modeLoose != 0)
		inThread.Store(InThread())
		t.Suspend(func() {}) // awaited as it is
		flag.Store(true)
		c := spawn(t, func(*Task) { ran.Add(1) })
		t.Join(c)
		t.Suspend(func() {})
	})
	require.True(t, eventually(waiting.Load))
	busy := submit(t, rt, hi, func(t *Task) {
		started.Store(true)
		end := time.Now().Add(patience)
		for !flag.Load() && time.Now().Before(end) {
			t.Yield()
		}
	})
	require.True(t, eventually(resumed.Done), "the resumed thread waited for the busy one")
	require.True(t, eventually(busy.Done))
	assert.True(t, sawLoose.Load(), "the resumed thread did not run loose")
	assert.True(t, inThread.Load(), "a loose thread's goroutine is known as a thread's")
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, int32(0), rt.loose.Load(), "every loose run ended")
}

// TestLooseStress pushes threads of the top rank through Await, Spawn,
// Join and panics inside Await-ed calls beside threads of the same rank
// that keep the workers busy, so that many resumptions find no worker free
// and run loose: every thread and every fork runs exactly once, and Close
// finds the runtime quiescent.
func TestLooseStress(t *testing.T) {
	rt, _, hi := levels(t, 2, 50, 50)
	const n, forks = 2000, 4
	var stop atomic.Bool
	var hogs sync.WaitGroup
	for range 2 { // threads that keep the workers for 5 ms each, one after another
		hogs.Go(func() {
			for !stop.Load() {
				submit(t, rt, hi, func(t *Task) {
					for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
						t.Yield()
					}
				}).Wait()
			}
		})
	}
	counts := make([]atomic.Int32, n*(forks+1))
	tasks := make([]*Task, n)
	for i := range tasks {
		tasks[i] = submit(t, rt, hi, func(t *Task) {
			counts[i*(forks+1)].Add(1)
			for k := range forks {
				func() {
					defer func() { _ = recover() }()
					t.Suspend(func() {
						if (i+k)%7 == 0 {
							panic("in an Await-ed call")
						}
					})
				}()
				c := spawn(t, func(*Task) { counts[i*(forks+1)+1+k].Add(1) })
				if k%2 == 0 {
					t.Suspend(func() {})
				}
				t.Join(c)
			}
		})
	}
	for _, tk := range tasks {
		require.True(t, eventually(tk.Done), "a thread never ended")
	}
	stop.Store(true)
	hogs.Wait()
	for i := range counts {
		require.Equal(t, int32(1), counts[i].Load(), "run %d times", counts[i].Load())
	}
	assert.True(t, eventually(func() bool { return rt.loose.Load() == 0 }), "every loose run ended")
}
