package pgstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/jobs/internal/storetest"
	"github.com/fairlyprompt/fairly/jobs/pgstore"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// DSNEnv names the environment variable with the PostgreSQL DSN the tests
// use; .ci/run sets it.
const DSNEnv = "FAIRLY_JOBS_POSTGRES_DSN"

// schemaDSN gives a DSN whose tables live in a fresh schema of their own,
// so that tests and packages running at once do not meet.
func schemaDSN(t testing.TB, name string) string {
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to a DSN (as .ci/run does)", DSNEnv)
	}
	dsn, err := pgstore.FreshSchema(context.Background(), dsn, name)
	require.NoError(t, err)
	return dsn
}

// node is one scheduler of a cluster, on its own runtime.
type node struct {
	s  *jobs.Scheduler
	st *jobs.Store
	rt *runtime.Runtime
}

func (n *node) close(t testing.TB) {
	require.NoError(t, n.s.Close())
	require.NoError(t, n.st.Close())
	require.NoError(t, n.rt.Close())
}

// watch checks every run against the caps and conflicts as it happens.
type watch struct {
	mu       sync.Mutex
	running  int
	byType   map[jobs.JobType]int
	byID     map[string]int
	runs     map[string]int
	violated []string
}

func (w *watch) enter(typ jobs.JobType, id string, slots int, caps map[jobs.JobType]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running++
	w.byType[typ]++
	w.byID[id]++
	w.runs[string(typ)+"/"+id]++
	if w.running > slots {
		w.violated = append(w.violated, "slots")
	}
	if c := caps[typ]; c > 0 && w.byType[typ] > c {
		w.violated = append(w.violated, "type cap "+string(typ))
	}
	if w.byID[id] > 1 {
		w.violated = append(w.violated, "conflict on "+id)
	}
}

func (w *watch) leave(typ jobs.JobType, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	w.byType[typ]--
	w.byID[id]--
}

// openNode starts a scheduler on the store of dsn; t nil panics on
// failure (a node process of BenchmarkThreeProcesses).
func openNode(t testing.TB, dsn string, cfg jobs.Config) *node {
	if t == nil {
		t = panicking{}
	}
	o := fairness.NewOrder()
	p := o.New("jobs")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 1})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	require.NoError(t, err)
	// A long lease: finished jobs stay in the store that long, for the
	// tests to count; dead processes are seen by their connections.
	st, err := pgstore.Open(context.Background(), dsn, jobs.StoreOptions{Lease: time.Minute})
	require.NoError(t, err)
	cfg.Store = st
	cfg.Tiers = []jobs.Tier{{Name: "t", Priority: p}}
	s, err := jobs.New(rt, cfg)
	require.NoError(t, err)
	return &node{s: s, st: st, rt: rt}
}

// Three schedulers on one database keep the total slots, a type's cap
// and a conflict group across all of them; every job runs once; RunSync
// on any of them gets the job's result.
func TestThreeNodesOneOrder(t *testing.T) {
	dsn := schemaDSN(t, "fairly_three_nodes")
	w := &watch{byType: map[jobs.JobType]int{}, byID: map[string]int{}, runs: map[string]int{}}
	caps := map[jobs.JobType]int{"clone": 2}
	body := func(typ jobs.JobType) jobs.Handler {
		return func(ctx context.Context, c *thread.Ctx, id string, payload []byte) error {
			w.enter(typ, id, 4, caps)
			defer w.leave(typ, id)
			if err := thread.Sleep(c, time.Millisecond); err != nil {
				return err
			}
			if string(payload) == "fail" {
				return errors.New("failed on purpose")
			}
			return nil
		}
	}
	cfg := jobs.Config{
		Slots: 4,
		Types: map[jobs.JobType]jobs.TypeConfig{
			"clone":  {DefaultCost: time.Millisecond, MaxConcurrency: 2, ConflictGroup: "git", Tier: "t", Handler: body("clone")},
			"repack": {DefaultCost: time.Millisecond, ConflictGroup: "git", Tier: "t", Handler: body("repack")},
		},
	}
	nodes := []*node{openNode(t, dsn, cfg), openNode(t, dsn, cfg), openNode(t, dsn, cfg)}
	ctx := context.Background()
	const n = 60 // clone r0..r29 and repack r0..r29: each id conflicts once
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j := jobs.Job{Type: "clone", ID: "r" + strconv.Itoa(i%30), Key: "k" + strconv.Itoa(i%4)}
			if i >= 30 {
				j.Type = "repack"
			}
			assert.NoError(t, nodes[i%3].s.RunSync(ctx, j))
		})
	}
	wg.Wait()
	err := nodes[1].s.RunSync(ctx, jobs.Job{Type: "repack", ID: "bad", Payload: []byte("fail")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed on purpose")
	for _, nd := range nodes {
		nd.close(t)
	}
	assert.Empty(t, w.violated)
	total := 0
	for id, r := range w.runs {
		total += r
		assert.Equal(t, 1, r, id)
	}
	assert.Equal(t, n+1, total)
}

// Two keys weighted 2:1, both backlogged, get 2/3 and 1/3 of the service
// (the slot time they are charged) when three processes share the work:
// this one and two others (the test binary started again). Finished jobs
// stay in the store for a lease, long here, so the store itself counts.
func TestWeightsAcrossProcesses(t *testing.T) {
	dsn := schemaDSN(t, "fairly_weights")
	stop := startNodes(t, "weights", dsn, 2)
	defer stop()
	n := openNode(t, dsn, weightsConfig())
	defer n.close(t)
	const each, window = 1200, 600
	var ids []string
	for i := range each {
		ids = append(ids, strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for _, k := range []string{"heavy", "light"} {
		for g := range 8 {
			wg.Go(func() {
				for i := g; i < each; i += 8 {
					assert.NoError(t, n.s.Submit(jobs.Job{Type: "j", ID: k + ids[i], Key: k}))
				}
			})
		}
	}
	wg.Wait()
	// The service each key got: the slot time it was charged, its runs'
	// wall times, at least the 2 ms estimate each (the charge sticks).
	count := func() (heavy, light, runs float64) {
		rs, err := n.st.DB().Query(`SELECT key, count(*), sum(greatest(elapsed, 2000000))
			FROM fairly_jobs WHERE state = 5 GROUP BY key`)
		require.NoError(t, err)
		defer rs.Close()
		for rs.Next() {
			var k string
			var c, ns float64
			require.NoError(t, rs.Scan(&k, &c, &ns))
			runs += c
			if k == "heavy" {
				heavy = ns / 1e9
			} else {
				light = ns / 1e9
			}
		}
		return heavy, light, runs
	}
	// Count from the moment both keys have all their jobs queued, over a
	// window that ends before the heavy key can run out.
	h0, l0, r0 := count()
	require.Less(t, r0, float64(each)/2, "too many ran while the jobs were being submitted")
	deadline := time.Now().Add(2 * time.Minute)
	h, l, r := h0, l0, r0
	for r < r0+window && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		h, l, r = count()
	}
	h, l = h-h0, l-l0
	require.GreaterOrEqual(t, r-r0, float64(window))
	t.Logf("over %.0f runs while both keys were backlogged: heavy %.3f s, light %.3f s of service", r-r0, h, l)
	assert.InDelta(t, 2.0/3, h/(h+l), 0.05, "heavy %.3f s, light %.3f s", h, l)
}

// startNodes starts n more processes (the test binary again), each a
// node with the named configuration on the store of dsn; stop kills them.
func startNodes(t testing.TB, config, dsn string, n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), nodeEnv+"="+config+"|"+dsn)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

func weightsConfig() jobs.Config {
	return jobs.Config{
		Slots:      3,
		KeyWeights: map[string]float64{"heavy": 2, "light": 1},
		Types: map[jobs.JobType]jobs.TypeConfig{"j": {DefaultCost: 2 * time.Millisecond, Tier: "t",
			Handler: func(ctx context.Context, c *thread.Ctx, _ string, _ []byte) error {
				return thread.Sleep(c, 2*time.Millisecond)
			}}},
	}
}

// nodeEnv makes the test binary a node of another test's cluster: its
// value is "config|dsn", and the node runs until it is killed.
const nodeEnv = "FAIRLY_PGSTORE_TEST_NODE"

func TestMain(m *testing.M) {
	if v := os.Getenv(nodeEnv); v != "" {
		config, dsn, _ := strings.Cut(v, "|")
		switch config {
		case "weights":
			openNode(nil, dsn, weightsConfig())
		case "hold":
			// Submits two jobs and holds them running until killed.
			n := openNode(nil, dsn, holdConfig(func(_ context.Context, c *thread.Ctx, _ string, _ []byte) error {
				thread.Await(c, func() struct{} { select {} })
				return nil
			}))
			for _, id := range []string{"x1", "x2"} {
				if err := n.s.Submit(jobs.Job{Type: "h", ID: id}); err != nil {
					panic(err)
				}
			}
		default:
			openNode(nil, dsn, benchConfig())
		}
		select {} // until the test kills it
	}
	goleak.VerifyTestMain(m)
}

func benchConfig() jobs.Config {
	return jobs.Config{
		Slots: 64,
		Types: map[jobs.JobType]jobs.TypeConfig{"j": {DefaultCost: time.Millisecond, Tier: "t",
			Handler: func(context.Context, *thread.Ctx, string, []byte) error { return nil }}},
	}
}

// BenchmarkThreeProcesses is the whole path across three processes on
// one database: this one submits 10 000 jobs with empty bodies per
// iteration from 64 goroutines, one key each, and it and two others (the
// test binary started again) run them on 64 slots in all; an iteration
// ends when the store holds no job that has not finished. It reports
// jobs/s.
func BenchmarkThreeProcesses(b *testing.B) {
	dsn := schemaDSN(b, "fairly_bench3")
	defer startNodes(b, "bench", dsn, 2)()
	n := openNode(b, dsn, benchConfig())
	defer n.close(b)
	const batch, submitters = 10_000, 64
	iter := 0
	for b.Loop() {
		iter++
		prefix := "repo" + strconv.Itoa(iter) + "-"
		var subs sync.WaitGroup
		for g := range submitters {
			subs.Go(func() {
				for i := g; i < batch; i += submitters {
					id := strconv.Itoa(i)
					if err := n.s.Submit(jobs.Job{Type: "j", ID: prefix + id, Key: "client" + id}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		subs.Wait()
		for {
			var left int
			require.NoError(b, n.st.DB().QueryRow(`SELECT count(*) FROM fairly_jobs WHERE state <> 5`).Scan(&left))
			if left == 0 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
}

// panicking is a testing.TB for a node process: a failure panics.
type panicking struct{ testing.TB }

func (panicking) Helper()                           {}
func (panicking) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (panicking) FailNow()                          { panic("failed") }

// BenchmarkSubmitThroughput is storetest.Throughput on one process.
func BenchmarkSubmitThroughput(b *testing.B) {
	st, err := pgstore.Open(context.Background(), schemaDSN(b, "fairly_bench"), jobs.StoreOptions{})
	require.NoError(b, err)
	defer st.Close()
	storetest.Throughput(b, st)
}

// holdConfig has one type, "h", whose jobs run body.
func holdConfig(body jobs.Handler) jobs.Config {
	return jobs.Config{
		Slots: 2,
		Types: map[jobs.JobType]jobs.TypeConfig{"h": {DefaultCost: time.Millisecond, Tier: "t", Handler: body}},
	}
}

// A process killed while it runs jobs gives them back: the survivor takes
// over the leadership and the slots at once (the dead process's
// connections are gone; no lease to wait out) and runs the jobs again as
// their second attempt.
func TestKilledProcessGivesBackItsJobs(t *testing.T) {
	dsn := schemaDSN(t, "fairly_killed")
	killChild := startNodes(t, "hold", dsn, 1)
	defer killChild()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRow(`SELECT count(*) FROM fairly_jobs WHERE state = 2`).Scan(&n) == nil && n == 2
	}, time.Minute, 5*time.Millisecond, "the child runs both jobs")
	var mu sync.Mutex
	seen := map[string]int{}
	n := openNode(t, dsn, holdConfig(func(ctx context.Context, _ *thread.Ctx, id string, _ []byte) error {
		mu.Lock()
		seen[id] = jobs.Attempt(ctx)
		mu.Unlock()
		return nil
	}))
	defer n.close(t)
	killChild()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 2
	}, time.Minute, 5*time.Millisecond)
	assert.Equal(t, map[string]int{"x1": 2, "x2": 2}, seen)
}
