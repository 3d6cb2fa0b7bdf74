package kernels

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRuntime starts a runtime of procs workers with a single priority.
func newRuntime(t testing.TB, procs int) (*runtime.Runtime, fairness.Priority) {
	t.Helper()
	o := fairness.NewOrder()
	p := o.New("kernel")
	rt, err := runtime.New(runtime.Config{Procs: procs, Order: o})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt, p
}

// corrupt spoils the result of the last run of inst so that Check must fail.
func corrupt(t *testing.T, inst Instance) {
	t.Helper()
	switch in := inst.(type) {
	case *Fib:
		in.result++
	case *uts:
		in.result.sum ^= 1 << 40
	case *strassen:
		in.c.d[len(in.c.d)/3]++
	case *bfs:
		for v := len(in.parent) - 1; v > 0; v-- { // the last reached vertex becomes its own parent
			if in.parent[v].Load() != -1 {
				in.parent[v].Store(int32(v))
				return
			}
		}
		t.Fatal("bfs reached only its root")
	case *sorter:
		in.keys[0], in.keys[len(in.keys)-1] = in.keys[len(in.keys)-1], in.keys[0]
	default:
		t.Fatalf("no way to corrupt a %T", inst)
	}
}

// testSizes are small enough for the race detector, yet go through every
// branch: strassen at 200 recurses twice, at 130 it meets an odd side above
// the cutoff; sort's buckets mostly fit the cutoff but some recurse.
var testSizes = []struct {
	kernel string
	size   int
}{
	{"fib", 18},
	{"fib-cutoff", 26},
	{"uts", 7},
	{"strassen", 200},
	{"strassen", 130},
	{"bfs", 50_000},
	{"sort", 200_000},
}

// TestVersionsAgree runs every version of every kernel in turn, corrupting
// the result before each run, so each Check passes only if that run
// rewrote the whole result correctly.
func TestVersionsAgree(t *testing.T) {
	rt1, p1 := newRuntime(t, 1)
	rt2, p2 := newRuntime(t, 2)
	for _, ts := range testSizes {
		t.Run(fmt.Sprintf("%s/%d", ts.kernel, ts.size), func(t *testing.T) {
			k, err := Lookup(ts.kernel)
			require.NoError(t, err)
			inst := k.New(ts.size)
			runs := []struct {
				name string
				run  func() error
			}{
				{"Seq", func() error { inst.Seq(); return nil }},
				{"Goroutines", func() error { inst.Goroutines(); return nil }},
				{"Fairly/P=1", func() error { return RunFairly(rt1, p1, inst) }},
				{"Fairly/P=2", func() error { return RunFairly(rt2, p2, inst) }},
			}
			for i, r := range runs {
				if i > 0 {
					corrupt(t, inst)
					require.ErrorIs(t, inst.Check(), ErrWrongResult, "corrupted before %s", r.name)
				}
				require.NoError(t, r.run(), r.name)
				require.NoError(t, inst.Check(), r.name)
			}
		})
	}
}

func TestFibFunctions(t *testing.T) {
	rt, p := newRuntime(t, 2)
	const n = 16
	want := fibIter(n)
	assert.Equal(t, 987, want)
	assert.Equal(t, want, FibSeq(n))
	assert.Equal(t, want, FibGoAll(n))
	assert.Equal(t, want, FibCutoffGo(n, 10))
	for _, cutoff := range []int{0, 1, 10, n} {
		got, err := thread.Run(rt, p, func(c *thread.Ctx) int { return FibCutoff(c, n, cutoff) })
		require.NoError(t, err)
		assert.Equal(t, want, got, "cutoff %d", cutoff)
	}
	got, err := thread.Run(rt, p, func(c *thread.Ctx) int { return FibSpawnAll(c, n) })
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// FibSpawns counts the calls with n ≥ 2 of the naive recursion.
	var calls func(n int) int
	calls = func(n int) int {
		if n < 2 {
			return 0
		}
		return 1 + calls(n-1) + calls(n-2)
	}
	for n := range 20 {
		assert.Equal(t, calls(n), FibSpawns(n), "n = %d", n)
	}
}

func TestCheckCatchesWrongSorts(t *testing.T) {
	s := newSort(50_000)
	s.Seq()
	require.NoError(t, s.Check())
	s.keys[100] = s.keys[101] // still in order, but a key is lost
	require.ErrorIs(t, s.Check(), ErrWrongResult)
}

func TestCheckCatchesWrongBFSTrees(t *testing.T) {
	// A path 0–1–2–3 with 0–4 beside it, and an isolated vertex 5.
	g := &graph{off: []int{0, 2, 4, 6, 7, 8, 8}, adj: []int32{1, 4, 0, 2, 1, 3, 2, 0}}
	b := bfsOn(g)
	for _, version := range []func(){b.Seq, b.Goroutines} {
		version()
		require.NoError(t, b.Check())
		assert.Equal(t, []int32{0, 0, 1, 2, 0, -1}, b.parents())
	}
	for _, bad := range []struct {
		why     string
		parents []int32
	}{
		{"the root has a parent", []int32{1, 0, 1, 2, 0, -1}},
		{"an unreachable vertex has a parent", []int32{0, 0, 1, 2, 0, 4}},
		{"a reachable vertex has none", []int32{0, 0, 1, -1, 0, -1}},
		{"a parent is not a neighbour", []int32{0, 0, 4, 2, 0, -1}},
		{"a parent is no closer to the root", []int32{0, 0, 3, 2, 0, -1}},
		{"a parent is not a vertex", []int32{0, 0, 1, 9, 0, -1}},
	} {
		for v, u := range bad.parents {
			b.parent[v].Store(u)
		}
		assert.ErrorIs(t, b.Check(), ErrWrongResult, bad.why)
	}
}

// TestSampleSortRepeatedKeys covers inputs whose sample cannot split them:
// the recursion must fall back to slices.Sort instead of looping, in the
// fine-grained sort too.
func TestSampleSortRepeatedKeys(t *testing.T) {
	sorts := map[string]func(a, buf []uint64, ids []uint16){
		"sampleSort":     func(a, buf []uint64, ids []uint16) { sampleSort(seq, a, buf, ids) },
		"fineSampleSort": func(a, buf []uint64, ids []uint16) { fineSampleSort(par{mode: sequential, fine: true}, a, buf, ids) },
	}
	for _, distinct := range []uint64{1, 3} {
		for name, sort := range sorts {
			a := make([]uint64, 3*sortCutoff+7)
			for i := range a {
				a[i] = mix(uint64(i)%distinct) % 1000
			}
			want := slices.Sorted(slices.Values(a))
			sort(a, make([]uint64, len(a)), make([]uint16, len(a)))
			assert.Equal(t, want, a, "%s, %d distinct keys", name, distinct)
		}
	}
}

func TestChildPanicReachesRun(t *testing.T) {
	rt, p := newRuntime(t, 2)
	_, err := thread.Run(rt, p, func(c *thread.Ctx) struct{} {
		parFor(fairly(c), 0, 8, 1, func(_ par, lo, _ int) {
			if lo == 5 {
				panic("leaf 5 failed")
			}
		})
		return struct{}{}
	})
	var pe *thread.PanicError
	require.ErrorAs(t, err, &pe)
	assert.ErrorContains(t, err, "leaf 5 failed")
}

func TestLookup(t *testing.T) {
	all := All()
	var names []string
	for _, k := range all {
		names = append(names, k.Name)
		got, err := Lookup(k.Name)
		require.NoError(t, err)
		assert.Equal(t, k.Name, got.Name)
		assert.NotEmpty(t, k.Doc, k.Name)
		assert.NotEmpty(t, k.Unit, k.Name)
		assert.Positive(t, k.DefaultSize, k.Name)
		assert.GreaterOrEqual(t, k.PaperSize, k.DefaultSize, k.Name)
	}
	assert.Equal(t, []string{"fib", "fib-cutoff", "uts", "strassen", "bfs", "sort"}, names)

	_, err := Lookup("dmm")
	require.ErrorIs(t, err, ErrUnknownKernel)
	for _, name := range names {
		assert.ErrorContains(t, err, name)
	}
	assert.False(t, errors.Is(err, ErrWrongResult))
}

func TestTinySizes(t *testing.T) {
	for _, k := range All() {
		for _, size := range []int{-3, 0, 1, 2} {
			inst := k.New(size)
			inst.Seq()
			assert.NoError(t, inst.Check(), "%s at size %d", k.Name, size)
		}
	}
}

// parents copies the BFS tree of the last run.
func (b *bfs) parents() []int32 {
	ps := make([]int32, len(b.parent))
	for v := range ps {
		ps[v] = b.parent[v].Load()
	}
	return ps
}

// fineTestSizes are testSizes made smaller where the fine versions, a
// goroutine at every call or key, are slow under the race detector; sort
// at 50,000 keys still recurses once before its base case.
var fineTestSizes = []struct {
	kernel string
	size   int
}{
	{"fib", 18},
	{"fib-cutoff", 18},
	{"uts", 7},
	{"strassen", 200},
	{"strassen", 130},
	{"bfs", 50_000},
	{"sort", 50_000},
}

// TestFineVersionsAgree runs the fine-grained versions of every kernel at
// P = 1, 2 and 8 and on goroutines, corrupting the result before each run.
func TestFineVersionsAgree(t *testing.T) {
	procs := []int{1, 2, 8}
	rts := make([]*runtime.Runtime, len(procs))
	prios := make([]fairness.Priority, len(procs))
	for i, p := range procs {
		rts[i], prios[i] = newRuntime(t, p)
	}
	for _, ts := range fineTestSizes {
		t.Run(fmt.Sprintf("%s/%d", ts.kernel, ts.size), func(t *testing.T) {
			k, err := Lookup(ts.kernel)
			require.NoError(t, err)
			inst, ok := k.New(ts.size).(FineInstance)
			require.True(t, ok, "%s has no fine-grained version", k.Name)
			inst.Seq()
			require.NoError(t, inst.Check())
			type run struct {
				name string
				run  func() error
			}
			var runs []run
			for i, p := range procs {
				runs = append(runs, run{fmt.Sprintf("Fine/P=%d", p), func() error { return RunFine(rts[i], prios[i], inst) }})
			}
			runs = append(runs, run{"FineGoroutines", func() error { inst.FineGoroutines(); return nil }})
			for _, r := range runs {
				corrupt(t, inst)
				require.ErrorIs(t, inst.Check(), ErrWrongResult, "corrupted before %s", r.name)
				require.NoError(t, r.run(), r.name)
				require.NoError(t, inst.Check(), r.name)
			}
		})
	}
}
