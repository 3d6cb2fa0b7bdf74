package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closeWithin closes rt and fails the test if Close has not returned
// within patience: a hang detector, not a timing goal.
func closeWithin(t *testing.T, rt *Runtime) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatalf("Close hangs: %d submitted threads and %d suspended ones still counted", rt.roots.Load(), rt.suspended.Load())
	}
}

// A submitted thread that a joiner claims before it starts runs inline on
// the joiner (Join's fast path) and must still leave Runtime.roots, or
// Close waits for it forever. On one worker the thread submitted from
// inside another sits in that worker's bank, unstarted, when its parent
// joins it.
func TestCloseAfterRootJoinedInline(t *testing.T) {
	rt, lo, _ := levels(t, 1, 50, 50)
	for range 20 {
		var inner *Task
		outer := submit(t, rt, lo, func(c *Task) {
			inner = submit(t, rt, lo, func(*Task) {})
			// The worker takes inner from its inbox into its bank at a
			// point that passes through the scheduler; Join's fast path
			// needs the next point not to be due.
			c.Yield()
			for c.g.w.attn.Load() != 0 {
				c.Yield()
			}
			c.Join(inner)
		})
		outer.Wait()
		require.True(t, inner.Done())
	}
	closeWithin(t, rt)
}
