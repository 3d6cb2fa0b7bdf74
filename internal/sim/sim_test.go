package sim

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// kernel builds a kernel of about perWorker of work per worker.
func kernel(t testing.TB, name string, procs int, perWorker int64) *Kernel {
	t.Helper()
	k, err := NewKernel(name, int64(procs)*perWorker, DefaultGrain(), DefaultCosts())
	require.NoError(t, err)
	return k
}

func loaded(k *Kernel, procs int, c [3]float64, seed uint64) Config {
	return Config{Procs: procs, Criterion: c, Kernel: k, Sink: c[Medium] > 0 || c[Low] < 100,
		Rate: 2000, EchoWork: 20_000, Seed: seed, Lead: DefaultParams().Quantum}
}

// recorded runs cfg keeping its event log.
func recorded(t *testing.T, cfg Config) *Result {
	t.Helper()
	cfg.Record = true
	res, err := Run(cfg)
	require.NoError(t, err)
	return res
}

func TestDeterministic(t *testing.T) {
	cfg := loaded(kernel(t, "uts", 16, 4e6), 16, [3]float64{50, 25, 25}, 7)
	a, b := recorded(t, cfg), recorded(t, cfg)
	assert.Equal(t, a.Digest, b.Digest)
	assert.Equal(t, a.Log, b.Log, "one seed, one schedule")
	assert.Equal(t, a.Events, len(a.Log))
	cfg.Seed = 8
	assert.NotEqual(t, a.Digest, recorded(t, cfg).Digest, "another seed, another schedule")
}

func TestReplay(t *testing.T) {
	cfg := loaded(kernel(t, "bfs", 8, 4e6), 8, [3]float64{50, 0, 50}, 3)
	res := recorded(t, cfg)
	require.NoError(t, Replay(cfg, res.Log))

	tampered := append([]Entry(nil), res.Log...)
	i := len(tampered) / 2
	tampered[i].Worker = (tampered[i].Worker + 1) % int32(cfg.Procs)
	err := Replay(cfg, tampered)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("event %d:", i))

	require.Error(t, Replay(cfg, res.Log[:len(res.Log)-1]), "a log that ends early")
	require.Error(t, Replay(cfg, append(res.Log, res.Log[len(res.Log)-1])), "a log with an event too many")
	other := cfg
	other.Seed++
	require.Error(t, Replay(other, res.Log), "another seed's schedule")
}

// The paper's bounds hold on every run: each kernel, alone, loaded under
// both criteria and winner-take-all, at several worker counts.
func TestTheorems(t *testing.T) {
	for _, procs := range []int{1, 2, 16, 64} {
		perWorker := int64(10e6)
		if procs >= 16 {
			perWorker = 3e6 // a few rounds: enough to cross round switches, fast under -race
		}
		for _, name := range KernelNames {
			k := kernel(t, name, procs, perWorker)
			for _, c := range [][3]float64{{0, 0, 100}, {50, 0, 50}, {50, 25, 25}, {100, 0, 0}} {
				cfg := loaded(k, procs, c, uint64(procs))
				cfg.Sink = c[Medium] > 0 || c == [3]float64{50, 0, 50}
				if c[High] == 0 {
					cfg.Rate = 0
				}
				res, err := Run(cfg)
				require.NoError(t, err, "%s P=%d %v", name, procs, c)
				bounds := Check(cfg, res)
				assert.NotEmpty(t, bounds, "%s P=%d %v: nothing checked", name, procs, c)
				for _, b := range bounds {
					assert.True(t, b.Holds(), "%s P=%d %v: %v", name, procs, c, b)
				}
				assert.GreaterOrEqual(t, res.CPU[Low]+res.Detached[Low], k.Work, "%s P=%d %v: the kernel's work was all done", name, procs, c)
			}
		}
	}
}

// Check is not vacuous: a run slower than Theorem 2 allows, or an
// interactive thread slower than Theorem 3 allows, is a violation.
func TestViolationsDetected(t *testing.T) {
	k := kernel(t, "fib", 2, 5e6)
	cfg := loaded(k, 2, [3]float64{50, 0, 50}, 1)
	res, err := Run(cfg)
	require.NoError(t, err)
	require.Empty(t, Violations(cfg, res))
	require.NotEmpty(t, res.Responses)

	slow := *res
	slow.Time = 10 * res.Time
	slow.Pending = nil // an arrival in flight at the end would seem to wait the whole run
	v := Violations(cfg, &slow)
	require.Len(t, v, 1)
	assert.Contains(t, v[0].Name, "Theorem 2")

	late := *res
	late.Responses = append([]int64(nil), res.Responses...)
	late.Responses[0] = 4 * cfg.Params.Quantum
	if late.Responses[0] == 0 {
		late.Responses[0] = 4 * DefaultParams().Quantum
	}
	v = Violations(cfg, &late)
	require.Len(t, v, 1)
	assert.Contains(t, v[0].Name, "Theorem 3")
}

func TestWorkSpan(t *testing.T) {
	c := DefaultCosts()
	g := DefaultGrain()
	f := func(n int64) Node { return Node{Shape: fib{g}, A: n} }
	m16 := workSpan(f(FibLeafN), c)
	assert.Zero(t, m16.forks, "a leaf forks nothing")
	assert.Equal(t, g.FibLeaf, m16.work)
	assert.Equal(t, m16.work, m16.span, "a leaf's span is its work")
	m17 := workSpan(f(FibLeafN+1), c)
	m15 := workSpan(f(FibLeafN-1), c)
	assert.Equal(t, int64(1), m17.forks)
	assert.Zero(t, m17.barriers)
	assert.Equal(t, m16.work+m15.work+max(1, g.FibLeaf/FibCalls(FibLeafN)), m17.work)
	assert.Equal(t, int64(1), FibCalls(1))
	assert.Equal(t, int64(3), FibCalls(2))
	assert.Equal(t, int64(5), FibCalls(3))

	l := parallel(8, 3*strideLen, 2) // eight iterations of three strides each
	m := workSpan(l, c)
	assert.Equal(t, int64(3), m.forks)
	assert.Equal(t, int64(8*3*strideLen*2), m.work)
	assert.Equal(t, int64(3*strideLen*2)+3*(c.Spawn+c.Join), m.span, "three levels of binary forks above one iteration")

	two := workSpan(Node{Shape: phases{l, l, {Shape: work{}, A: 5}}}, c)
	assert.Equal(t, 2*m.work+5, two.work)
	assert.Equal(t, int64(2), two.barriers, "two parallel phases, each joined before the next")
	assert.Equal(t, 2*m.forks, two.forks)
}

func TestKernelSizes(t *testing.T) {
	for _, name := range KernelNames {
		small, big := kernel(t, name, 1, 2e6), kernel(t, name, 8, 2e6)
		assert.GreaterOrEqual(t, small.Work, int64(2e6), name)
		assert.Greater(t, big.Work, small.Work, name)
		assert.Greater(t, big.Work/big.Span, int64(4), "%s: parallel", name)
	}
	_, err := NewKernel("strassen", 1, DefaultGrain(), DefaultCosts())
	assert.Error(t, err)
}

// Threads that compute for 20 ms without a preemption point (library
// calls) hold every worker: an interactive thread takes a stale worker's
// token (revocation) instead of waiting for a call to end.
func TestStallRescue(t *testing.T) {
	const procs = 4
	calls := make([]Node, procs)
	for i := range calls {
		calls[i] = Node{Shape: work{}, A: 20e6}
	}
	root := Node{Shape: fanout(calls)}
	m := workSpan(root, DefaultCosts())
	k := &Kernel{Name: "stall", Root: root, Work: m.work, Span: m.span, Forks: m.forks}
	cfg := loaded(k, procs, [3]float64{50, 0, 50}, 5)
	cfg.Sink = false
	res, err := Run(cfg)
	require.NoError(t, err)
	assert.Positive(t, res.Rescues, "tokens were revoked")
	require.NotEmpty(t, res.Responses)
	require.Len(t, res.Waits, len(res.Responses))
	for i, r := range res.Responses {
		assert.Less(t, r, int64(policy.StallTicks+2)*DefaultParams().Interrupt, "an interactive thread waited for a library call")
		assert.GreaterOrEqual(t, res.Waits[i], DefaultCosts().Arrive, "a wait costs at least the arrival")
		assert.LessOrEqual(t, res.Waits[i]+cfg.EchoWork, r, "the thread's own work follows its wait")
	}
	assert.Empty(t, Violations(cfg, res))
}

// Interactive threads arrive on running goroutines and take busy workers at
// once (seizures); the kernel's revoked code goes on detached on the same
// P cores: no work is lost or made up, and no more than P cores' worth of
// processor time is spent.
func TestSeizuresShareCores(t *testing.T) {
	for _, procs := range []int{1, 2, 16} {
		k := kernel(t, "sort", procs, 5e6)
		cfg := loaded(k, procs, [3]float64{100, 0, 0}, 5)
		cfg.Sink = false
		res, err := Run(cfg)
		require.NoError(t, err)
		assert.Positive(t, res.Seizures, "P=%d: arrivals took busy workers", procs)
		assert.Positive(t, res.Detached[Low], "P=%d: revoked code went on detached", procs)
		assert.GreaterOrEqual(t, res.CPU[Low]+res.Detached[Low], k.Work, "P=%d: the kernel's work was all done", procs)
		var spent int64
		for i := range res.CPU {
			spent += res.CPU[i] + res.Detached[i]
		}
		assert.LessOrEqual(t, spent, int64(procs)*(res.Time+cfg.Lead), "P=%d: no more than P cores", procs)
		t.Logf("P=%d: time %d µs, seizures %d, detached %d µs, idle %.3f", procs, res.Time/1000, res.Seizures, res.Detached[Low]/1000, res.Idle)
		assert.GreaterOrEqual(t, res.Idle, 0.0)
		assert.Empty(t, Violations(cfg, res), "P=%d", procs)
	}
}

// A kernel that runs on donated cycles only (criterion 100-0-0, nothing at
// the top priority) spreads after its barriers as it does alone: workers
// donating for want of top-priority work ask for it, and a busy worker
// that cannot serve such a request still deals its surplus to a sleeper
// (policy.DealsAfterRequest; simulator finding 8).
func TestDonatedKernelSpreads(t *testing.T) {
	const procs = 128
	for _, name := range []string{"sort", "bfs"} {
		k := kernel(t, name, procs, 50e6)
		alone, err := Run(Config{Procs: procs, Criterion: [3]float64{0, 0, 100}, Kernel: k, Seed: 3})
		require.NoError(t, err)
		donated, err := Run(Config{Procs: procs, Criterion: [3]float64{100, 0, 0}, Kernel: k, Seed: 3})
		require.NoError(t, err)
		t.Logf("%s P=%d: alone %.1f ms, on donated cycles %.1f ms", name, procs, float64(alone.Time)/1e6, float64(donated.Time)/1e6)
		assert.Less(t, float64(donated.Time), 1.1*float64(alone.Time), "%s: donated cycles spread the kernel as its own rounds do", name)
	}
}

// Bad configurations are errors, not hangs.
func TestBadConfig(t *testing.T) {
	k := kernel(t, "fib", 1, 1e6)
	for name, cfg := range map[string]Config{
		"no workers":    {Kernel: k},
		"no kernel":     {Procs: 1},
		"negative rate": {Procs: 1, Kernel: k, Rate: -1, EchoWork: 1},
		"NaN rate":      {Procs: 1, Kernel: k, Rate: math.NaN(), EchoWork: 1},
		"no echo work":  {Procs: 1, Kernel: k, Rate: 10},
		"negative lead": {Procs: 1, Kernel: k, Lead: -1},
		"bad criterion": {Procs: 1, Kernel: k, Criterion: [3]float64{-1, 0, 1}},
	} {
		_, err := Run(cfg)
		assert.Error(t, err, name)
	}
}

// An interactive priority that arrives faster than rounds begin but uses
// under its share borrows every round: its threads end within a small part
// of a round, not at its own rounds (one in twenty at 5-45-50). Each takes
// a worker at once and is checked at its first preemption points whether
// it may borrow (policy.MayBorrow): by its share, not by having become
// ready lately, which a priority with threads queued at most round starts
// never is.
func TestFrequentArrivalsBorrow(t *testing.T) {
	for _, procs := range []int{1, 2} {
		cfg := loaded(kernel(t, "fib", procs, 50e6), procs, [3]float64{5, 45, 50}, 11)
		cfg.Rate, cfg.EchoWork = float64(1000*procs), 30_000 // 3 % of every worker
		res, err := Run(cfg)
		require.NoError(t, err)
		require.Greater(t, len(res.Responses), 30, "P=%d: enough arrivals", procs)
		rs := slices.Sorted(slices.Values(res.Responses))
		p99 := rs[len(rs)*99/100]
		t.Logf("P=%d: %d arrivals, response p99 %d µs", procs, len(rs), p99/1000)
		assert.Less(t, p99, DefaultParams().Quantum/10, "P=%d: a small part of a round at most", procs)
	}
}
