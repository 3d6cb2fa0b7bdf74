package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenarios of the upstream projects' own tests (the fair-queuing
// scheduler's and the weighted-groups scheduler's), rewritten on a fake
// clock with jobs the test ends itself.

// ids lists the (type/id) of the jobs started since the last call, and
// ends them.
func (fs *fakeSched) ids() []string {
	var out []string
	for _, e := range fs.m.take() {
		out = append(out, string(e.tid.typ)+"/"+e.tid.id)
		fs.finish(e, nil)
	}
	return out
}

func upstreamConfig(slots int) Config {
	return Config{
		Slots: slots,
		Tiers: []Tier{{Name: "bg"}, {Name: "fg"}},
		Types: map[JobType]TypeConfig{
			"fgSetup": {DefaultCost: sec, MaxConcurrency: 1, ConflictGroup: "git", Tier: "fg"},
			"fg":      {DefaultCost: sec, MaxConcurrency: 1, ConflictGroup: "git", Tier: "fg"},
			"bg":      {DefaultCost: sec, MaxConcurrency: 1, ConflictGroup: "git", Tier: "bg"},
			"work":    {DefaultCost: sec, Tier: "bg"},
		},
	}
}

// A higher tier wins a freed conflict although it arrived second.
func TestUpstreamPriorityOrderingOnConflict(t *testing.T) {
	fs := newFakeSched(t, upstreamConfig(50))
	require.NoError(t, fs.Submit(Job{Type: "fgSetup", ID: "repo1", Run: noop}))
	setup := fs.m.take()
	require.NoError(t, fs.Submit(Job{Type: "bg", ID: "repo1", Run: noop}))
	fs.advance(10 * time.Millisecond)
	require.NoError(t, fs.Submit(Job{Type: "fg", ID: "repo1", Run: noop}))
	assert.Empty(t, fs.ids())
	fs.finish(setup[0], nil)
	fg := fs.m.take()
	require.Len(t, fg, 1)
	assert.Equal(t, JobType("fg"), fg[0].tid.typ)
	fs.finish(fg[0], nil)
	assert.Equal(t, []string{"bg/repo1"}, fs.ids())
	require.NoError(t, fs.Close())
}

// The client that consumed less goes first, although it arrived second.
func TestUpstreamFairnessLowerCostFirst(t *testing.T) {
	fs := newFakeSched(t, upstreamConfig(1))
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "warmup", Key: "clientA", Run: noop}))
	fs.advance(time.Second)
	fs.finish(fs.m.take()[0], nil)
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "blocker", Run: noop}))
	blocker := fs.m.take()
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "a1", Key: "clientA", Run: noop}))
	fs.advance(10 * time.Millisecond)
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "b1", Key: "clientB", Run: noop}))
	fs.finish(blocker[0], nil)
	next := fs.m.take()
	assert.Equal(t, "b1", next[0].tid.id)
	fs.finish(next[0], nil)
	assert.Equal(t, []string{"work/a1"}, fs.ids())
	require.NoError(t, fs.Close())
}

// Admission cost prevents DoS: client A's five jobs end at once, so the
// wall time they held their slots is 0, yet A keeps paying for the five
// admissions. Behind a blocker, B, who consumed nothing, goes first.
func TestUpstreamAdmissionCostPreventsDoS(t *testing.T) {
	fs := newFakeSched(t, upstreamConfig(5))
	for i := range 5 {
		require.NoError(t, fs.Submit(Job{Type: "work", ID: "burst" + itoa(i), Key: "clientA", Run: noop}))
	}
	burst := fs.m.take()
	require.Len(t, burst, 5)
	for _, e := range burst {
		fs.finish(e, nil) // no time passes: actual 0 < estimate 1 s
	}
	blockers := make([]string, 5)
	for i := range blockers {
		blockers[i] = "blocker" + itoa(i)
		require.NoError(t, fs.Submit(Job{Type: "work", ID: blockers[i], Run: noop}))
	}
	held := fs.m.take()
	require.Len(t, held, 5)
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "a1", Key: "clientA", Run: noop}))
	fs.advance(10 * time.Millisecond)
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "b1", Key: "clientB", Run: noop}))
	fs.finish(held[0], nil)
	next := fs.m.take()
	require.Len(t, next, 1)
	assert.Equal(t, "b1", next[0].tid.id, "the client that paid for five admissions waits")
	fs.finish(next[0], nil)
	for _, e := range held[1:] {
		fs.finish(e, nil)
	}
	assert.Equal(t, []string{"work/a1"}, fs.ids())
	require.NoError(t, fs.Close())
}

// Two RunSync callers share a job; one giving up leaves it to the other,
// and the job's context is cancelled only when the last gives up.
func TestUpstreamSharedRunSyncCancellation(t *testing.T) {
	fs := newFakeSched(t, upstreamConfig(1))
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- fs.RunSync(ctxA, Job{Type: "work", ID: "shared", Key: "a", Run: noop}) }()
	require.Eventually(t, func() bool { return fs.Snapshot().Running == 1 }, 10*time.Second, time.Millisecond)
	go func() { errs <- fs.RunSync(ctxB, Job{Type: "work", ID: "shared", Key: "b", Run: noop}) }()
	job := fs.m.launchedOne(t)
	require.Eventually(t, func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return job.owners == 2
	}, 10*time.Second, time.Millisecond)
	cancelA()
	assert.ErrorIs(t, <-errs, context.Canceled)
	assert.NoError(t, job.ctx.Err(), "one waiter is left")
	cancelB()
	assert.ErrorIs(t, <-errs, context.Canceled)
	<-job.ctx.Done()
	fs.finish(job, context.Canceled)
	require.NoError(t, fs.Close())
}

// An aged low-priority job is admitted before a fresh higher one.
func TestUpstreamAgedTaskBeforeYounger(t *testing.T) {
	cfg := upstreamConfig(1)
	cfg.Aging = Aging{Interval: time.Second}
	cfg.Tiers = []Tier{{Name: "idle"}, {Name: "bg"}, {Name: "normal"}, {Name: "fg"}}
	cfg.Types["idle"] = TypeConfig{DefaultCost: sec, Tier: "idle"}
	cfg.Types["normal"] = TypeConfig{DefaultCost: sec, Tier: "normal"}
	cfg.Aging.Ceiling = "fg"
	fs := newFakeSched(t, cfg)
	require.NoError(t, fs.Submit(Job{Type: "work", ID: "blocker", Run: noop}))
	blocker := fs.m.take()
	require.NoError(t, fs.Submit(Job{Type: "idle", ID: "old", Run: noop}))
	fs.advance(10 * time.Minute)
	require.NoError(t, fs.Submit(Job{Type: "normal", ID: "fresh", Run: noop}))
	fs.finish(blocker[0], nil)
	old := fs.m.take()
	require.Len(t, old, 1)
	assert.Equal(t, "old", old[0].tid.id)
	p := fs.Snapshot().Pending
	require.Len(t, p, 1)
	assert.Equal(t, "normal", p[0].EffectiveTier)
	fs.finish(old[0], nil)
	fs.finish(fs.m.take()[0], nil)
	require.NoError(t, fs.Close())
}

// Work-conserving groups: a group alone gets every slot; a paused group's
// slots go to the other.
func TestUpstreamGroupsWorkConserving(t *testing.T) {
	cfg := oneType(10)
	cfg.Groups = map[string]GroupConfig{"a": {Weight: 1}, "b": {Weight: 1}}
	fs := newFakeSched(t, cfg)
	for i := range 10 {
		require.NoError(t, fs.Submit(Job{Type: "j", ID: "a" + itoa(i), Group: "a", Run: noop}))
	}
	for _, e := range fs.m.take() {
		fs.finish(e, nil)
	}
	assert.Equal(t, uint64(10), fs.MetricsSnapshot().QueueWait.Count, "the idle group's share is lent")
	fs2 := newFakeSched(t, func() Config { c := oneType(6); c.Groups = cfg.Groups; return c }())
	fs2.PauseGroup("a")
	for i := range 10 {
		require.NoError(t, fs2.Submit(Job{Type: "j", ID: "a" + itoa(i), Group: "a", Run: noop}))
		require.NoError(t, fs2.Submit(Job{Type: "j", ID: "b" + itoa(i), Group: "b", Run: noop}))
	}
	started := fs2.m.take()
	assert.Len(t, started, 6)
	for _, e := range started {
		assert.Equal(t, "b", e.grp.name)
	}
}
