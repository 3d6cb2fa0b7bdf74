package sqlitestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/jobs/internal/storetest"
	"github.com/fairlyprompt/fairly/jobs/sqlitestore"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// childEnv names the store file of a child process that the test kills.
const childEnv = "SQLITESTORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		child(path)
		return
	}
	goleak.VerifyTestMain(m)
}

// run records the runs of jobs.
type runs struct {
	mu    sync.Mutex
	order []string // "id/attempt"
}

func (r *runs) add(id string, attempt int) {
	r.mu.Lock()
	r.order = append(r.order, id+"/"+strconv.Itoa(attempt))
	r.mu.Unlock()
}

// open makes a one-slot scheduler on the store at path. block's jobs
// wait until release is closed (nil: they return at once); work's jobs
// sleep their payload's milliseconds.
func open(t testing.TB, path string, r *runs, release <-chan struct{}) (*jobs.Scheduler, *jobs.Store, func()) {
	o := fairness.NewOrder()
	p := o.New("jobs")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 1})
	check(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	check(t, err)
	st, err := sqlitestore.Open(path, sqlitestore.Options{})
	check(t, err)
	body := func(ctx context.Context, c *thread.Ctx, id string, payload []byte) error {
		r.add(id, jobs.Attempt(ctx))
		ms, _ := strconv.Atoi(string(payload))
		return thread.Sleep(c, time.Duration(ms)*time.Millisecond)
	}
	s, err := jobs.New(rt, jobs.Config{
		Store: st,
		Slots: 1,
		Tiers: []jobs.Tier{{Name: "t", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{
			"work": {DefaultCost: time.Second, Tier: "t", Handler: body},
			"block": {DefaultCost: time.Second, Tier: "t", Handler: func(ctx context.Context, c *thread.Ctx, id string, _ []byte) error {
				r.add(id, jobs.Attempt(ctx))
				if release != nil {
					thread.Await(c, func() struct{} { <-release; return struct{}{} })
				}
				return nil
			}},
		},
	})
	check(t, err)
	return s, st, func() {
		check(t, s.Close())
		check(t, st.Close())
		check(t, rt.Close())
	}
}

func check(t testing.TB, err error) {
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Helper()
		require.NoError(t, err)
	}
}

// child teaches the store a heavy key and an estimate, then leaves one
// job running and two pending, says "ready" and waits to be killed.
func child(path string) {
	r := &runs{}
	s, _, _ := open(nil, path, r, make(chan struct{}))
	ctx := context.Background()
	check(nil, s.RunSync(ctx, jobs.Job{Type: "work", ID: "w1", Key: "heavy", Payload: []byte("200")}))
	check(nil, s.RunSync(ctx, jobs.Job{Type: "work", ID: "w2", Key: "heavy", Payload: []byte("0")}))
	check(nil, s.Submit(jobs.Job{Type: "block", ID: "b", Key: "x"}))
	for s.Snapshot().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	check(nil, s.Submit(jobs.Job{Type: "work", ID: "w1", Key: "heavy", Payload: []byte("0")}))
	check(nil, s.Submit(jobs.Job{Type: "work", ID: "p1", Key: "light", Payload: []byte("0")}))
	// The estimate learned here, from runs whose length the machine's
	// load decides: the test compares what survives with it.
	var est time.Duration
	for _, p := range s.Snapshot().Pending {
		if p.ID == "w1" {
			est = p.Estimate
		}
	}
	fmt.Println("ready", int64(est))
	select {}
}

// A process killed with SIGKILL loses nothing: its pending jobs come back
// with their submission time, its running job comes back with the next
// attempt number, and the keys' charges and the learned estimates
// survive, so the order after the restart is the one before it.
func TestJobsSurviveKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	var learned int64
	_, err = fmt.Sscanf(line, "ready %d\n", &learned)
	require.NoError(t, err, "child said %q", line)
	killed := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &exit)
	time.Sleep(20 * time.Millisecond)

	r := &runs{}
	release := make(chan struct{})
	s, _, closeAll := open(t, path, r, release)
	assert.Equal(t, 1, s.Recovered(), "the running job comes back")
	sinceKill := time.Since(killed) // before the snapshot: its waits are at least this
	snap := s.Snapshot()
	ests := map[string]time.Duration{}
	for _, p := range snap.Pending {
		ests[p.ID] = p.Estimate
		assert.GreaterOrEqual(t, p.Wait, sinceKill, "%s keeps its submission time", p.ID)
	}
	// A run of 200 ms (or longer, on a loaded machine) taught it.
	assert.GreaterOrEqual(t, ests["w1"], 100*time.Millisecond, "w1's estimate was learned")
	assert.InDelta(t, float64(learned), float64(ests["w1"]), 1e3, "w1's learned estimate survives (to the µs)")
	assert.Equal(t, time.Second, ests["p1"], "p1 was never run")
	vt := map[string]float64{}
	for _, k := range snap.Keys {
		vt[k.Key] = k.VirtualTime
	}
	assert.InDelta(t, 2, vt["heavy"], 1e-9, "heavy's charge for two runs of 1 s estimated survives")
	assert.Less(t, vt["light"], vt["heavy"])
	// What came back runs without waiting for a submission: the blocker
	// starts again.
	require.Eventually(t, func() bool { return s.Snapshot().Running == 1 }, 10*time.Second, time.Millisecond)
	// A second submission of a stored (type, id) joins it.
	require.NoError(t, s.Submit(jobs.Job{Type: "work", ID: "p1", Key: "light", Payload: []byte("0")}))
	close(release)
	closeAll()
	assert.Equal(t, []string{"b/2", "p1/1", "w1/1"}, r.order[len(r.order)-3:],
		"the blocker runs again as attempt 2; then the light key before the heavy one")
	assert.Len(t, r.order, 3, "every job runs once after the restart")

	// Nothing is left: a third start finds an empty store.
	r = &runs{}
	s, _, closeAll = open(t, path, r, nil)
	assert.Empty(t, s.Snapshot().Pending)
	closeAll()
}

// Submit returns once its job is committed: jobs submitted by a scheduler
// that never ran them are all there for the next one, and a durable
// scheduler refuses closures and types without a Handler.
func TestSubmitCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	r := &runs{}
	release := make(chan struct{})
	s, st, closeAll := open(t, path, r, release)
	require.NoError(t, s.Submit(jobs.Job{Type: "block", ID: "b"}))
	for i := range 100 {
		require.NoError(t, s.Submit(jobs.Job{Type: "work", ID: strconv.Itoa(i), Key: strconv.Itoa(i % 7), Payload: []byte("0")}))
	}
	err := s.Submit(jobs.Job{Type: "work", ID: "closure", Run: func(context.Context, *thread.Ctx) error { return nil }})
	assert.ErrorIs(t, err, jobs.ErrInvalidJob)
	var n int
	require.NoError(t, st.DB().QueryRow(`SELECT count(*) FROM fairly_jobs`).Scan(&n))
	assert.Equal(t, 101, n)
	go func() { // the blocker ends once Shutdown has dropped the rest
		for len(s.Snapshot().Pending) > 0 {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	dropped, err := s.Shutdown(context.Background())
	require.NoError(t, err)
	assert.Len(t, dropped, 100)
	// Counted in the database, not in the next scheduler's snapshot: that
	// one starts running the jobs as it opens, and a few may be done before
	// a snapshot sees them.
	require.NoError(t, st.DB().QueryRow(`SELECT count(*) FROM fairly_jobs`).Scan(&n))
	assert.Equal(t, 100, n, "Shutdown leaves a durable store's pending jobs in it")
	closeAll()

	r = &runs{}
	_, _, closeAll = open(t, path, r, nil)
	closeAll()
	assert.Len(t, r.order, 100)
	assert.NotContains(t, r.order, "b/1", "the blocker finished before the restart")

	o := fairness.NewOrder()
	p := o.New("p")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 1})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	require.NoError(t, err)
	defer rt.Close()
	st2, err := sqlitestore.Open(path, sqlitestore.Options{})
	require.NoError(t, err)
	defer st2.Close()
	_, err = jobs.New(rt, jobs.Config{Slots: 1, Tiers: []jobs.Tier{{Name: "t", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{"work": {DefaultCost: time.Second, Tier: "t"}}, Store: st2})
	assert.True(t, errors.Is(err, jobs.ErrInvalidConfig), "a durable store needs Handlers: %v", err)
}

// BenchmarkSubmitThroughput is storetest.Throughput on a fresh file.
func BenchmarkSubmitThroughput(b *testing.B) {
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "jobs.db"), sqlitestore.Options{})
	require.NoError(b, err)
	defer st.Close()
	storetest.Throughput(b, st)
}
