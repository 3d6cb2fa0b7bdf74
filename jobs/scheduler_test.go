package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a two-priority runtime with Procs 2 and a scheduler on it.
type fixture struct {
	rt     *runtime.Runtime
	hi, lo fairness.Priority
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	o := fairness.NewOrder()
	hi, lo := o.New("fg"), o.New("bg")
	require.NoError(t, o.Less(lo, hi))
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, lo: 50})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return &fixture{rt: rt, hi: hi, lo: lo}
}

func (f *fixture) config() jobs.Config {
	return jobs.Config{
		Slots: 4,
		Tiers: []jobs.Tier{{Name: "bg", Priority: f.lo, Cap: 2}, {Name: "fg", Priority: f.hi}},
		Types: map[jobs.JobType]jobs.TypeConfig{
			"clone":  {DefaultCost: 10 * time.Millisecond, ConflictGroup: "git", Tier: "fg"},
			"repack": {DefaultCost: 20 * time.Millisecond, MaxConcurrency: 1, ConflictGroup: "git", Tier: "bg"},
			"export": {DefaultCost: 5 * time.Millisecond, Tier: "bg"},
		},
	}
}

func (f *fixture) scheduler(t *testing.T, cfg jobs.Config) *jobs.Scheduler {
	t.Helper()
	s, err := jobs.New(f.rt, cfg)
	require.NoError(t, err)
	// Registered after the runtime's cleanup, so it runs before it.
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func fib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return fib(c, n-1) })
	b := fib(c, n-2)
	a, _ := thread.Join(c, h)
	return a + b
}

func TestRunSyncRunsParallelWorkOnFairly(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	var got int
	var prio fairness.Priority
	err := s.RunSync(context.Background(), jobs.Job{Type: "clone", ID: "repo", Key: "client",
		Run: func(_ context.Context, c *thread.Ctx) error {
			prio = c.Priority()
			got = fib(c, 18)
			return nil
		}})
	require.NoError(t, err)
	assert.Equal(t, 2584, got)
	assert.Equal(t, f.hi, prio, "a foreground job runs at its tier's priority")

	boom := errors.New("boom")
	err = s.RunSync(context.Background(), jobs.Job{Type: "export", ID: "x",
		Run: func(context.Context, *thread.Ctx) error { return boom }})
	assert.ErrorIs(t, err, boom)
	err = s.RunSync(context.Background(), jobs.Job{Type: "export", ID: "y",
		Run: func(context.Context, *thread.Ctx) error { panic("kaput") }})
	var pe *thread.PanicError
	assert.ErrorAs(t, err, &pe, "a panicking job reports, the scheduler carries on")
}

// gate blocks job bodies, without holding a processor, until opened.
type gate chan struct{}

func (g gate) wait(c *thread.Ctx) {
	thread.Await(c, func() struct{} { <-g; return struct{}{} })
}

func TestEveryJobRunsOnceAndConflictsNeverOverlap(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	const n = 300
	var runs [n]atomic.Int32
	var inside [10]atomic.Int32 // jobs of the git group running per repo
	var overlap atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				typ := []jobs.JobType{"clone", "repack", "export"}[i%3]
				repo := i % 10
				id := "repo" + strconv.Itoa(repo) + "/" + strconv.Itoa(i)
				if typ != "export" {
					id = "repo" + strconv.Itoa(repo)
				}
				j := jobs.Job{Type: typ, ID: id, Key: "k" + strconv.Itoa(i%7), Group: "g" + strconv.Itoa(i%3),
					Run: func(context.Context, *thread.Ctx) error {
						runs[i].Add(1)
						if typ != "export" {
							if inside[repo].Add(1) > 1 {
								overlap.Store(true)
							}
							time.Sleep(50 * time.Microsecond)
							inside[repo].Add(-1)
						}
						return nil
					}}
				if i%2 == 0 {
					assert.NoError(t, s.RunSync(context.Background(), j))
				} else {
					assert.NoError(t, s.Submit(j))
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, s.Close())
	assert.False(t, overlap.Load(), "two jobs of a conflict group ran on the same id at once")
	for i := range runs {
		if i%3 == 2 {
			// Exports have IDs of their own: each runs, once.
			assert.Equal(t, int32(1), runs[i].Load(), "export %d", i)
		} else {
			// Others may coalesce or share with a job of the same (type, id).
			assert.LessOrEqual(t, runs[i].Load(), int32(1), "job %d ran twice", i)
		}
	}
	assert.Equal(t, 0, s.Snapshot().Running)
	assert.Empty(t, s.Snapshot().Pending)
}

// oneSlotBlocked is a scheduler with one slot, held by a job that waits
// for the gate.
func oneSlotBlocked(t *testing.T) (*jobs.Scheduler, gate) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Slots = 1
	s := f.scheduler(t, cfg)
	g := make(gate)
	require.NoError(t, s.Submit(jobs.Job{Type: "export", ID: "block", Run: func(_ context.Context, c *thread.Ctx) error {
		g.wait(c)
		return nil
	}}))
	return s, g
}

func TestDuplicateSubmitsCoalesce(t *testing.T) {
	s, g := oneSlotBlocked(t)
	var runs atomic.Int32
	job := jobs.Job{Type: "export", ID: "dup", Run: func(context.Context, *thread.Ctx) error { runs.Add(1); return nil }}
	for range 5 {
		require.NoError(t, s.Submit(job))
	}
	assert.Len(t, s.Snapshot().Pending, 1)
	close(g)
	require.NoError(t, s.Close())
	assert.Equal(t, int32(1), runs.Load())
}

func TestConcurrentRunSyncShareOneExecution(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	g := make(gate)
	var runs atomic.Int32
	job := jobs.Job{Type: "clone", ID: "linux", Run: func(_ context.Context, c *thread.Ctx) error {
		runs.Add(1)
		g.wait(c)
		return errors.New("shared result")
	}}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.RunSync(context.Background(), job) }()
	}
	require.Eventually(t, func() bool { return runs.Load() == 1 }, 10*time.Second, time.Millisecond)
	// The other callers attach to the running job (a caller that came after
	// its end would run it again).
	require.Eventually(t, func() bool { return jobs.Callers(s, "clone", "linux") == 3 }, 10*time.Second, time.Millisecond)
	close(g)
	wg.Wait()
	assert.Equal(t, int32(1), runs.Load())
	for _, err := range errs {
		assert.EqualError(t, err, "shared result")
	}
}

func TestRunSyncCancelledWhilePendingIsWithdrawn(t *testing.T) {
	s, g := oneSlotBlocked(t)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	done := make(chan error)
	go func() {
		done <- s.RunSync(ctx, jobs.Job{Type: "clone", ID: "r", Run: func(context.Context, *thread.Ctx) error {
			ran.Store(true)
			return nil
		}})
	}()
	require.Eventually(t, func() bool { return len(s.Snapshot().Pending) == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Empty(t, s.Snapshot().Pending)
	close(g)
	require.NoError(t, s.Close())
	assert.False(t, ran.Load())
}

func TestRunSyncCancelledWhileRunningCancelsTheJob(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var sawCancel atomic.Bool
	done := make(chan error)
	go func() {
		done <- s.RunSync(ctx, jobs.Job{Type: "clone", ID: "r", Run: func(jctx context.Context, c *thread.Ctx) error {
			close(started)
			thread.Await(c, func() struct{} { <-jctx.Done(); return struct{}{} })
			sawCancel.Store(true)
			return jctx.Err()
		}})
	}()
	<-started
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, s.Close())
	assert.True(t, sawCancel.Load())
}

// The job's context is its thread's: c.Context() is ctx, and a
// thread.Sleep or a Join of a spawned child ends when the job is
// cancelled, whether its RunSync caller gives up or Shutdown's context
// ends.
func TestJobContextReachesItsThreads(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	body := func(started chan<- struct{}, same *atomic.Bool) jobs.Func {
		return func(ctx context.Context, c *thread.Ctx) error {
			same.Store(c.Context() == ctx)
			close(started)
			child := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) error {
				return thread.Sleep(c, time.Hour)
			})
			if _, err := thread.Join(c, child); err != nil {
				return err
			}
			return thread.Sleep(c, time.Hour)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var same atomic.Bool
	done := make(chan error)
	go func() { done <- s.RunSync(ctx, jobs.Job{Type: "clone", ID: "caller", Run: body(started, &same)}) }()
	<-started
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.True(t, same.Load(), "c.Context() is the job's ctx")

	started = make(chan struct{})
	var result error
	resultDone := make(chan struct{})
	go func() {
		defer close(resultDone)
		result = s.RunSync(context.Background(), jobs.Job{Type: "clone", ID: "shutdown", Run: body(started, &same)})
	}()
	<-started
	sctx, scancel := context.WithCancel(context.Background())
	scancel()
	_, err := s.Shutdown(sctx)
	assert.ErrorIs(t, err, context.Canceled)
	<-resultDone // the sleeping job ends once Shutdown cancels it
	assert.ErrorIs(t, result, context.Canceled)
	require.NoError(t, s.Close())
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	good := f.config()
	for name, mutate := range map[string]func(*jobs.Config){
		"zero slots":        func(c *jobs.Config) { c.Slots = 0 },
		"negative slots":    func(c *jobs.Config) { c.Slots = -3 },
		"no tiers":          func(c *jobs.Config) { c.Tiers = nil },
		"negative tier cap": func(c *jobs.Config) { c.Tiers[0].Cap = -1 },
		"zero cost": func(c *jobs.Config) {
			c.Types["export"] = jobs.TypeConfig{Tier: "bg"}
		},
		"negative cost": func(c *jobs.Config) {
			c.Types["export"] = jobs.TypeConfig{DefaultCost: -time.Second, Tier: "bg"}
		},
		"zero group weight": func(c *jobs.Config) { c.Groups = map[string]jobs.GroupConfig{"a": {}} },
		"NaN group weight": func(c *jobs.Config) {
			c.Groups = map[string]jobs.GroupConfig{"a": {Weight: math.NaN()}}
		},
		"negative key weight": func(c *jobs.Config) { c.KeyWeights = map[string]float64{"k": -1} },
		"minimums over slots": func(c *jobs.Config) {
			c.Groups = map[string]jobs.GroupConfig{"a": {Weight: 1, Min: 3}, "b": {Weight: 1, Min: 2}}
		},
		"NaN smith factor": func(c *jobs.Config) { c.SmithFactor = math.NaN() },
		"alpha above one":  func(c *jobs.Config) { c.Alpha = 1.5 },
		"negative lag":     func(c *jobs.Config) { c.MaxLag = -time.Second },
		"negative smith":   func(c *jobs.Config) { c.SmithFactor = -1 },
		"urgent without interval": func(c *jobs.Config) {
			c.Aging = jobs.Aging{Urgent: 1}
		},
		"foreign priority": func(c *jobs.Config) { c.Tiers[0].Priority = fairness.NewOrder().New("x") },
	} {
		cfg := good
		cfg.Tiers = append([]jobs.Tier(nil), good.Tiers...)
		cfg.Types = map[jobs.JobType]jobs.TypeConfig{}
		for k, v := range good.Types {
			cfg.Types[k] = v
		}
		mutate(&cfg)
		_, err := jobs.New(f.rt, cfg)
		assert.ErrorIs(t, err, jobs.ErrInvalidConfig, name)
	}
	cfg := good
	cfg.Types = map[jobs.JobType]jobs.TypeConfig{"x": {DefaultCost: time.Second, Tier: "nope"}}
	_, err := jobs.New(f.rt, cfg)
	assert.ErrorIs(t, err, jobs.ErrUnknownTier)
	cfg = good
	cfg.Aging = jobs.Aging{Interval: time.Second, Ceiling: "nope"}
	_, err = jobs.New(f.rt, cfg)
	assert.ErrorIs(t, err, jobs.ErrUnknownTier)
	_, err = jobs.New(nil, good)
	assert.ErrorIs(t, err, jobs.ErrInvalidConfig)

	s := f.scheduler(t, good)
	noop := func(context.Context, *thread.Ctx) error { return nil }
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "nope", Run: noop}), jobs.ErrUnknownType)
	assert.ErrorIs(t, s.RunSync(context.Background(), jobs.Job{Type: "nope", Run: noop}), jobs.ErrUnknownType)
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export"}), jobs.ErrInvalidJob)
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export", Weight: -1, Run: noop}), jobs.ErrInvalidJob)
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export", Weight: math.NaN(), Run: noop}), jobs.ErrInvalidJob)
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export", Run: noop, Retry: jobs.Retry{Max: -1}}), jobs.ErrInvalidJob)
	assert.ErrorIs(t, s.SetGroupWeight("g", 0), jobs.ErrInvalidConfig)
	assert.ErrorIs(t, s.SetGroupWeight("g", math.Inf(1)), jobs.ErrInvalidConfig)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export", Run: noop}), jobs.ErrClosed)
	assert.ErrorIs(t, s.RunSync(context.Background(), jobs.Job{Type: "export", Run: noop}), jobs.ErrClosed)
	assert.NoError(t, s.Close(), "Close is idempotent")
}

func TestEventsMetricsAndEvidence(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	var events []jobs.Event
	cfg := f.config()
	cfg.Slots = 2
	cfg.Groups = map[string]jobs.GroupConfig{"a": {Weight: 1}, "b": {Weight: 1}}
	cfg.Logger = slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.OnEvent = func(ev jobs.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }
	s := f.scheduler(t, cfg)
	g := make(gate)
	require.NoError(t, s.Submit(jobs.Job{Type: "clone", ID: "r1", Group: "a", Run: func(_ context.Context, c *thread.Ctx) error {
		g.wait(c)
		return nil
	}}))
	noop := func(context.Context, *thread.Ctx) error { return nil }
	// The same (type, id) while it runs joins it.
	require.NoError(t, s.Submit(jobs.Job{Type: "clone", ID: "r1", Group: "b", Key: "x", Run: noop}))
	require.NoError(t, s.Submit(jobs.Job{Type: "repack", ID: "r1", Group: "b", Run: noop}))
	require.NoError(t, s.SetGroupWeight("b", 3))
	snap := s.Snapshot()
	require.Len(t, snap.Pending, 1)
	assert.Equal(t, "bg", snap.Pending[0].BaseTier)
	assert.Equal(t, "conflict", snap.Pending[0].Blocked)
	close(g)
	require.NoError(t, s.Close())

	m := s.MetricsSnapshot()
	assert.Equal(t, uint64(2), m.QueueWait.Count, "two admissions: the second clone joined the first")
	var groups []string
	for _, g := range m.GroupAllocation {
		groups = append(groups, g.Name)
	}
	assert.Subset(t, groups, []string{"a", "b"})
	assert.Len(t, m.GroupUtilization, len(m.GroupAllocation))
	assert.NotEmpty(t, m.PendingByTier)

	mu.Lock()
	kinds := map[jobs.EventKind]int{}
	for _, ev := range events {
		kinds[ev.Kind]++
	}
	mu.Unlock()
	assert.Equal(t, 1, kinds[jobs.EventWeightChanged])
	assert.Positive(t, kinds[jobs.EventAllocationChanged])

	reasons := map[string]int{}
	admits := 0
	for line := range bytes.SplitSeq(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec), string(line))
		switch rec["msg"] {
		case "jobs.admit":
			admits++
			assert.Contains(t, rec, "smith")
			assert.Contains(t, rec, "key_vtime")
		case "jobs.skip":
			reasons[rec["reason"].(string)]++
		}
	}
	assert.Equal(t, 2, admits)
	assert.Positive(t, reasons["conflict"], reasons)
}

// syncWriter serialises writes from the scheduler's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestPauseAndResumeGroup(t *testing.T) {
	f := newFixture(t)
	s := f.scheduler(t, f.config())
	s.PauseGroup("maint")
	var ran atomic.Bool
	require.NoError(t, s.Submit(jobs.Job{Type: "export", ID: "e", Group: "maint",
		Run: func(context.Context, *thread.Ctx) error { ran.Store(true); return nil }}))
	require.NoError(t, s.RunSync(context.Background(), jobs.Job{Type: "export", ID: "other",
		Run: func(context.Context, *thread.Ctx) error { return nil }}))
	assert.False(t, ran.Load(), "a paused group's jobs wait")
	assert.Len(t, s.Snapshot().Pending, 1)
	s.ResumeGroup("maint")
	require.Eventually(t, ran.Load, 10*time.Second, time.Millisecond)
}

func TestAgingRunsOnItsOwnTimer(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Slots = 1
	cfg.Aging = jobs.Aging{Grace: 5 * time.Millisecond, Interval: 5 * time.Millisecond, Urgent: 2}
	aged := make(chan jobs.Event, 16)
	cfg.OnEvent = func(ev jobs.Event) {
		if ev.Kind == jobs.EventAged {
			aged <- ev
		}
	}
	s := f.scheduler(t, cfg)
	g := make(gate)
	require.NoError(t, s.Submit(jobs.Job{Type: "export", ID: "block", Run: func(_ context.Context, c *thread.Ctx) error {
		g.wait(c)
		return nil
	}}))
	require.NoError(t, s.Submit(jobs.Job{Type: "export", ID: "waiting", Run: func(context.Context, *thread.Ctx) error { return nil }}))
	// Nothing is submitted or completes meanwhile: only the timer can age it.
	var first jobs.Event
	select {
	case first = <-aged:
	case <-time.After(10 * time.Second):
		t.Fatal("the pending job never aged")
	}
	assert.Equal(t, "bg", first.BaseTier)
	assert.Equal(t, "fg", first.EffectiveTier)
	require.Eventually(t, func() bool {
		p := s.Snapshot().Pending
		return len(p) == 1 && p[0].Urgent
	}, 10*time.Second, time.Millisecond)
	close(g)
}

// A job admitted after the runtime closed fails with runtime.ErrClosed,
// and the backlog behind it drains instead of hanging Close.
func TestJobsAfterRuntimeCloseFail(t *testing.T) {
	o := fairness.NewOrder()
	p := o.New("p")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 100})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	require.NoError(t, err)
	s, err := jobs.New(rt, jobs.Config{Slots: 1, Tiers: []jobs.Tier{{Name: "t", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{"j": {DefaultCost: time.Millisecond, Tier: "t"}}})
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	noop := func(context.Context, *thread.Ctx) error { return nil }
	for i := range 100 {
		require.NoError(t, s.Submit(jobs.Job{Type: "j", ID: strconv.Itoa(i), Run: noop}))
	}
	assert.ErrorIs(t, s.RunSync(context.Background(), jobs.Job{Type: "j", ID: "last", Run: noop}), runtime.ErrClosed)
	require.NoError(t, s.Close())
}

// Shutdown on a real runtime: the running job finishes, the rest are
// dropped and reported, their RunSync callers get ErrClosed.
func TestShutdownOnTheRuntime(t *testing.T) {
	s, g := oneSlotBlocked(t)
	noop := func(context.Context, *thread.Ctx) error { return nil }
	require.NoError(t, s.Submit(jobs.Job{Type: "export", ID: "later", Run: noop}))
	waiter := make(chan error)
	go func() { waiter <- s.RunSync(context.Background(), jobs.Job{Type: "clone", ID: "r", Run: noop}) }()
	require.Eventually(t, func() bool { return len(s.Snapshot().Pending) == 2 }, 10*time.Second, time.Millisecond)
	done := make(chan []jobs.JobRef)
	go func() {
		dropped, err := s.Shutdown(context.Background())
		assert.NoError(t, err)
		done <- dropped
	}()
	assert.ErrorIs(t, <-waiter, jobs.ErrClosed)
	close(g)
	dropped := <-done
	assert.ElementsMatch(t, []jobs.JobRef{{Type: "export", ID: "later"}, {Type: "clone", ID: "r"}}, dropped)
	assert.ErrorIs(t, s.Submit(jobs.Job{Type: "export", ID: "x", Run: noop}), jobs.ErrClosed)
}
