package tokens

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAutoTokens(t *testing.T) {
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 2, 5: 4, 6: 4, 7: 5, 8: 6, 16: 12} {
		assert.Equal(t, want, AutoTokens(procs), "procs %d", procs)
	}
}

// TestTokensBoundConcurrency runs many tasks that checkpoint often and
// checks that no more than the tokens ever run at once, and that all end.
func TestTokensBoundConcurrency(t *testing.T) {
	const n, tasks = 2, 16
	l := New(n, 50*time.Microsecond)
	var running, most, done atomic.Int64
	var wg sync.WaitGroup
	for range tasks {
		wg.Go(func() {
			l.Run(func(checkpoint func()) {
				for range 200 {
					r := running.Add(1)
					for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
					}
					time.Sleep(time.Microsecond)
					running.Add(-1)
					checkpoint()
				}
			})
			done.Add(1)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(tasks), done.Load())
	assert.LessOrEqual(t, most.Load(), int64(n))
	assert.Equal(t, n, l.free, "every token came back")
}

// TestNewTasksFirst: a task that gives its token up at a checkpoint waits
// behind a new task.
func TestNewTasksFirst(t *testing.T) {
	l := New(1, 0)
	var order []string
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Run(func(checkpoint func()) {
			close(started)
			for l.waiting.Load() == 0 {
				time.Sleep(time.Millisecond) // until the new task queues
			}
			checkpoint() // gives the token to the new task
			order = append(order, "old")
		})
	})
	<-started
	l.Run(func(func()) { order = append(order, "new") })
	wg.Wait()
	assert.Equal(t, []string{"new", "old"}, order)
}
