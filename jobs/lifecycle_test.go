package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Point 5: a (type, id) submitted again while it runs joins the running
// job; a Submit that joins a RunSync's job keeps it alive when the
// RunSync caller gives up.
func TestDedupJoinsTheRunningJob(t *testing.T) {
	fs := newFakeSched(t, oneType(2))
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "x", Run: noop}))
	first := fs.m.take()
	require.Len(t, first, 1)
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "x", Run: noop}))
	assert.Empty(t, fs.m.take(), "the second Submit did not start a second run")
	assert.Empty(t, fs.Snapshot().Pending)
	fs.finish(first[0], nil)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- fs.RunSync(ctx, Job{Type: "j", ID: "y", Run: noop}) }()
	started := fs.m.launchedOne(t)
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "y", Run: noop}))
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.NoError(t, started.ctx.Err(), "the Submit still wants the job: it is not cancelled")
	fs.finish(started, nil)
	assert.Empty(t, fs.m.take())
	require.NoError(t, fs.Close())
}

// Retries wait out their backoff, keep their submission time and their
// dedup place, and stop after Max.
func TestRetryWithBackoffKeepsSubmissionTime(t *testing.T) {
	cfg := oneType(1)
	cfg.Types["low"] = TypeConfig{DefaultCost: time.Second, Tier: "t"}
	fs := newFakeSched(t, cfg)
	boom := errors.New("boom")
	job := Job{Type: "j", ID: "x", Run: noop, Retry: Retry{Max: 2, Backoff: 10 * time.Second}}
	done := make(chan error)
	go func() { done <- fs.RunSync(context.Background(), job) }()
	run := fs.m.launchedOne(t)
	fs.advance(time.Second)
	fs.finish(run, boom)
	p := fs.Snapshot().Pending
	require.Len(t, p, 1)
	assert.Equal(t, "retry backoff", p[0].Blocked)
	assert.Equal(t, 1, p[0].Attempts)
	require.NoError(t, fs.Submit(job), "joins the job in backoff")
	fs.advance(9 * time.Second)
	assert.Empty(t, fs.m.take(), "backoff not over")
	fs.advance(time.Second)
	run = fs.m.take()[0]
	assert.Equal(t, epoch, run.submitted, "a retry keeps its first submission time")
	fs.finish(run, boom)
	fs.advance(19 * time.Second)
	assert.Empty(t, fs.m.take(), "the second backoff doubles")
	fs.advance(time.Second)
	run = fs.m.take()[0]
	fs.finish(run, boom)
	assert.ErrorIs(t, <-done, boom, "gives up after Max retries")
	assert.Equal(t, 10*time.Second, Retry{Backoff: 5 * time.Second, MaxBackoff: 10 * time.Second}.delay(3))
	require.NoError(t, fs.Close())
}

// Point 8: a Close called while another runs waits for the same end, and
// the pending jobs still run.
func TestConcurrentCloseWaitsAndDrains(t *testing.T) {
	fs := newFakeSched(t, oneType(1))
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "a", Run: noop}))
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "b", Run: noop}))
	a := fs.m.take()
	require.Len(t, a, 1)
	closed := make(chan int, 2)
	for i := range 2 {
		go func() { _ = fs.Close(); closed <- i }()
	}
	require.Eventually(t, func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.closing
	}, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, fs.Submit(Job{Type: "j", ID: "c", Run: noop}), ErrClosed)
	fs.finish(a[0], nil)
	b := fs.m.take()
	require.Len(t, b, 1, "Close drains: the pending job runs")
	select {
	case <-closed:
		t.Fatal("a Close returned while a job was running")
	default:
	}
	fs.finish(b[0], nil)
	<-closed
	<-closed
	assert.NoError(t, fs.Close(), "after the end, Close returns at once")
}

// Shutdown drops the pending jobs, reports them, lets the running one
// finish; with an expired context it cancels the running job instead.
func TestShutdownDropsPendingAndReports(t *testing.T) {
	fs := newFakeSched(t, oneType(1))
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "run", Run: noop}))
	waiter := make(chan error)
	go func() { waiter <- fs.RunSync(context.Background(), Job{Type: "j", ID: "p1", Key: "k", Run: noop}) }()
	require.Eventually(t, func() bool { return len(fs.Snapshot().Pending) == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, fs.Submit(Job{Type: "j", ID: "p2", Group: "g", Run: noop}))
	running := fs.m.take()
	require.Len(t, running, 1)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dropped, err := fs.Shutdown(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []JobRef{{Type: "j", ID: "p1", Key: "k"}, {Type: "j", ID: "p2", Group: "g"}}, dropped)
	assert.ErrorIs(t, <-waiter, ErrClosed)
	assert.Error(t, running[0].ctx.Err(), "the running job was told to stop")
	fs.finish(running[0], context.Canceled)
	dropped, err = fs.Shutdown(context.Background())
	assert.NoError(t, err)
	assert.Empty(t, dropped)
	assert.Empty(t, fs.m.take(), "nothing ran after the shutdown")
	_, err = fs.Shutdown(nil) //nolint:staticcheck // a nil context is the point
	assert.ErrorIs(t, err, ErrInvalidJob)
}

// Point 8: RunSync with a nil context is an error, not a panic.
func TestRunSyncNilContext(t *testing.T) {
	fs := newFakeSched(t, oneType(1))
	err := fs.RunSync(nil, Job{Type: "j", ID: "x", Run: noop}) //nolint:staticcheck // a nil context is the point
	assert.ErrorIs(t, err, ErrInvalidJob)
	assert.Empty(t, fs.m.take())
	require.NoError(t, fs.Close())
}
