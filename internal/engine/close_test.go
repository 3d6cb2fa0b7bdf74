package engine

import (
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// test closes its runtimes, and Close stops every goroutine a runtime made
// (Q, PROTOCOLS.md).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// A submitted thread that a joiner claims while its entry waits in another
// worker's inbox runs on the joiner's worker, and changes its fork depth
// there (Nest), while that worker drains its inbox: the stale entry must
// carry the depth it was queued with, not read the running thread's (under
// the race detector, a read would be a data race). The thread still runs
// once and leaves Runtime.roots. The watchdog is off, so that only the
// thread that spins there without a point holds the first worker.
func TestStaleInboxEntryOfRunningThread(t *testing.T) {
	o := fairness.NewOrder()
	lo := o.New("lo")
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{lo: 1})
	require.NoError(t, err)
	cfg := testConfig(2, c)
	cfg.Interrupt = time.Hour
	rt := New(cfg)
	var release atomic.Bool
	var holder atomic.Pointer[worker]
	spinner := submit(t, rt, lo, func(x *Task) {
		holder.Store(x.g.w)
		spinUntil(&release, patience) // no point: its worker drains nothing
		x.Yield()                     // due (its inbox got a thread): drains it
	})
	for holder.Load() == nil {
		time.Sleep(100 * time.Microsecond)
	}
	w := holder.Load()
	time.Sleep(2 * policy.StaleAfter) // steering now passes w by

	var runs atomic.Int32
	r := &Task{}
	require.NoError(t, r.Init(rt, lo, fn(func(r *Task) {
		runs.Add(1)
		release.Store(true)
		for w.inbox.n.Load() != 0 { // w drains its inbox now
			goruntime.Gosched()
		}
		r.depth++ // r's own field while it runs (wakeWaiters writes it so
		r.depth-- // when r waits): unordered with w's reads of r's entry
	})))
	rt.roots.Add(1) // as Submit does, but into w's inbox
	r.root = true
	w.give(item{t: r})
	submit(t, rt, lo, func(y *Task) { y.Join(r) }).Wait() // on the other worker
	spinner.Wait()
	closeWithin(t, rt)
	assert.Equal(t, int32(1), runs.Load())
}
