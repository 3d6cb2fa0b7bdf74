package thread_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// For runs every iteration exactly once, splitting over the workers.
func TestForEveryIterationOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			rt, p := forRT(t, procs)
			const n = 200_000
			seen := make([]atomic.Int32, n)
			err := runErr(rt, p, func(c *thread.Ctx) error {
				return thread.For(c, 0, n, func(c *thread.Ctx, i int) {
					seen[i].Add(1)
					for range i % 64 { // uneven bodies
						_ = fmt.Sprint()
					}
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range seen {
				if got := seen[i].Load(); got != 1 {
					t.Fatalf("iteration %d ran %d times", i, got)
				}
			}
		})
	}
}

// A loop splits when another worker wants work: For over a range too long
// to finish runs until Stats counts a split, then cancels its context. No
// time is asserted: on a loaded machine the idle worker asks later, and
// the loop runs longer (patience bounds a hang).
func TestForSplitsForIdleWorker(t *testing.T) {
	rt, p := forRT(t, 2)
	before := rt.Stats().Promotions
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(closePatience)
	err := runErrContext(ctx, rt, p, func(c *thread.Ctx) error {
		return thread.For(c, 0, math.MaxInt, func(c *thread.Ctx, i int) {
			if i%4096 == 0 && (rt.Stats().Promotions > before || time.Now().After(deadline)) {
				cancel()
			}
		})
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Greater(t, rt.Stats().Promotions, before, "no split in %v", closePatience)
}

// A panic in one iteration comes back as a PanicError once the rest of the
// loop's parts have finished.
func TestForPanic(t *testing.T) {
	rt, p := forRT(t, 2)
	var ran atomic.Int64
	err := runErr(rt, p, func(c *thread.Ctx) error {
		return thread.For(c, 0, 100_000, func(c *thread.Ctx, i int) {
			ran.Add(1)
			if i == 77_777 {
				panic("iteration 77777")
			}
		})
	})
	var pe *thread.PanicError
	if !errors.As(err, &pe) || pe.Value != "iteration 77777" {
		t.Fatalf("err = %v, want the iteration's panic", err)
	}
	if ran.Load() == 0 {
		t.Fatal("no iteration ran")
	}
}

func TestForBadInput(t *testing.T) {
	rt, p := forRT(t, 1)
	err := runErr(rt, p, func(c *thread.Ctx) error { return thread.For(c, 0, 10, nil) })
	if !errors.Is(err, thread.ErrNilFunction) {
		t.Fatalf("nil body: err = %v", err)
	}
	err = runErr(rt, p, func(c *thread.Ctx) error {
		return thread.For(c, 10, 0, func(*thread.Ctx, int) { panic("must not run") })
	})
	if err != nil {
		t.Fatalf("empty range: err = %v", err)
	}
}

// Nested loops split at both levels and still run each cell once.
func TestForNested(t *testing.T) {
	rt, p := forRT(t, 2)
	const n = 300
	var sum atomic.Int64
	err := runErr(rt, p, func(c *thread.Ctx) error {
		return thread.For(c, 0, n, func(c *thread.Ctx, i int) {
			if err := thread.For(c, 0, n, func(c *thread.Ctx, j int) { sum.Add(int64(i*n + j)) }); err != nil {
				panic(err)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(n*n) * int64(n*n-1) / 2; sum.Load() != want {
		t.Fatalf("sum = %d, want %d", sum.Load(), want)
	}
}

func forRT(t *testing.T, procs int) (*runtime.Runtime, fairness.Priority) {
	_, ps, c := three(t, 50, 25, 25)
	return newRT(t, procs, c), ps[2]
}

// runErr runs f as a thread and gives its error, or the thread's own.
func runErr(rt *runtime.Runtime, p fairness.Priority, f func(c *thread.Ctx) error) error {
	v, err := thread.Run(rt, p, f)
	if err != nil {
		return err
	}
	return v
}

func fib2(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Fork2(c, fib2, n-1, n-2)
	return a + b
}

// Fork2 gives the right results at every P, including when forks are taken
// by other workers (fib(27) forks 300,000 times).
func TestFork2(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			rt, p := forRT(t, procs)
			for range 3 {
				v, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fib2(c, 27) })
				if err != nil || v != 196418 {
					t.Fatalf("fib2(27) = %d, %v", v, err)
				}
			}
		})
	}
}

// A panic in either half of a Fork2 reaches the caller; a panic in the
// first half cancels the second when nobody took it.
func TestFork2Panic(t *testing.T) {
	rt, p := forRT(t, 2)
	var second atomic.Int32
	_, err := thread.Run(rt, p, func(c *thread.Ctx) int {
		a, _ := thread.Fork2(c, func(c *thread.Ctx, i int) int {
			if i == 0 {
				panic("first")
			}
			second.Add(1)
			return i
		}, 0, 1)
		return a
	})
	var pe *thread.PanicError
	if !errors.As(err, &pe) || pe.Value != "first" {
		t.Fatalf("err = %v, want the first half's panic", err)
	}
	_, err = thread.Run(rt, p, func(c *thread.Ctx) int {
		_, b := thread.Fork2(c, func(c *thread.Ctx, i int) int {
			if i == 1 {
				panic("second")
			}
			return i
		}, 0, 1)
		return b
	})
	if !errors.As(err, &pe) || pe.Value != "second" {
		t.Fatalf("err = %v, want the second half's panic", err)
	}
	// The second half made a real thread (the first parks in Await, which
	// promotes it) and run by the runtime: its panic reaches the caller with
	// its own value, not wrapped once more.
	started := make(chan struct{})
	_, err = thread.Run(rt, p, func(c *thread.Ctx) int {
		_, b := thread.Fork2(c, func(c *thread.Ctx, i int) int {
			if i == 0 {
				return thread.Await(c, func() int { <-started; return 0 })
			}
			close(started)
			panic("promoted")
		}, 0, 1)
		return b
	})
	if !errors.As(err, &pe) || pe.Value != "promoted" {
		t.Fatalf("err = %v, want the promoted half's panic", err)
	}
	if n := second.Load(); n > 0 {
		t.Logf("the second half ran %d times after the first panicked (taken by another worker)", n)
	}
}

// Join2 gives both results at every P, including when the second call is
// taken by another worker, and a panic in either call reaches the caller.
func TestJoin2(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			rt, p := forRT(t, procs)
			v, err := thread.Run(rt, p, func(c *thread.Ctx) int { return join2Fib(c, 24) })
			require.NoError(t, err)
			assert.Equal(t, 46368, v)
			s, err := thread.Run(rt, p, func(c *thread.Ctx) string {
				n, s := thread.Join2(c, func(*thread.Ctx) int { return 7 }, func(*thread.Ctx) string { return "seven" })
				return fmt.Sprint(n, s)
			})
			require.NoError(t, err)
			assert.Equal(t, "7seven", s)
		})
	}
	rt, p := forRT(t, 2)
	for i, want := range []string{"f", "g"} {
		_, err := thread.Run(rt, p, func(c *thread.Ctx) int {
			a, b := thread.Join2(c,
				func(*thread.Ctx) int {
					if i == 0 {
						panic("f")
					}
					return 1
				},
				func(*thread.Ctx) int {
					if i == 1 {
						panic("g")
					}
					return 2
				})
			return a + b
		})
		var pe *thread.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, want, pe.Value)
	}
}

// A thread that recovers a panic from inside a Fork2 goes on forking with
// the right results: the fork the panic left pushed is dropped by the
// enclosing Fork2, and on one worker (nobody to take it) the second call of
// the Fork2 whose first call panicked never runs.
func TestFork2RecoveredPanic(t *testing.T) {
	rt, p := forRT(t, 1)
	var second atomic.Int32
	var half func(c *thread.Ctx, n int) int
	half = func(c *thread.Ctx, n int) int {
		switch n {
		case -1:
			panic("first")
		case -2:
			second.Add(1)
			return 0
		case 0: // recovers a panic of a Fork2, then forks on above it
			func() {
				defer func() { _ = recover() }()
				thread.Fork2(c, half, -1, -2)
			}()
			return fib2(c, 12)
		}
		return n
	}
	v, err := thread.Run(rt, p, func(c *thread.Ctx) int {
		a, b := thread.Fork2(c, half, 0, 5)
		return a + b + fib2(c, 10)
	})
	require.NoError(t, err)
	assert.Equal(t, 144+5+55, v)
	assert.Zero(t, second.Load(), "the second call of a Fork2 whose first panicked ran")
}

// A first call that ends its goroutine with runtime.Goexit (t.FailNow in a
// test helper, say) ends the thread with ErrGoexit, and the second call,
// which nobody took, never runs.
func TestFork2Goexit(t *testing.T) {
	rt, p := forRT(t, 1)
	var second atomic.Int32
	h := thread.Go(rt, p, func(c *thread.Ctx) int {
		a, b := thread.Fork2(c, func(c *thread.Ctx, i int) int {
			if i == 0 {
				goruntime.Goexit()
			}
			second.Add(1)
			return i
		}, 0, 1)
		return a + b
	})
	_, err := h.Wait()
	assert.ErrorIs(t, err, thread.ErrGoexit)
	v, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fib2(c, 15) })
	require.NoError(t, err)
	assert.Equal(t, 610, v, "forks after a Goexit")
	assert.Zero(t, second.Load())
}

// Stress: Fork2, For and Spawn mixed, on more workers than cores, with
// leaves that now and then block outside Await (so their workers are
// revoked and their lazy forks taken by the revoker while the owner goes on
// forking). Every leaf runs exactly once.
func TestStressLazyForks(t *testing.T) {
	_, ps, c := three(t, 50, 25, 25)
	rt := newRT(t, 4, c)
	var leaves atomic.Int64
	var tree func(c *thread.Ctx, n int) int
	tree = func(c *thread.Ctx, n int) int {
		switch {
		case n < 2:
			if leaves.Add(1)%1500 == 0 {
				time.Sleep(300 * time.Microsecond) // blocks outside Await
			}
			return 1
		case n%3 == 0:
			h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return tree(c, n-1) })
			b := tree(c, n-2)
			a, err := thread.Join(c, h)
			if err != nil {
				panic(err)
			}
			return a + b
		case n%5 == 0:
			var sum atomic.Int64
			if err := thread.For(c, 0, 2, func(c *thread.Ctx, i int) { sum.Add(int64(tree(c, n-1-i))) }); err != nil {
				panic(err)
			}
			return int(sum.Load())
		}
		a, b := thread.Fork2(c, tree, n-1, n-2)
		return a + b
	}
	const roots, depth = 24, 18
	want := 4181 // leaves of the tree: fib(19)
	var wg sync.WaitGroup
	for i := range roots {
		wg.Go(func() {
			v, err := thread.Run(rt, ps[i%3], func(c *thread.Ctx) int { return tree(c, depth) })
			assert.NoError(t, err)
			assert.Equal(t, want, v, "root %d", i)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(roots*want), leaves.Load(), "every leaf ran exactly once")
}

// Forks that no other worker takes allocate nothing: fib(20) through Fork2
// makes 10,945 forks, and a whole Run of it allocates only what Run itself
// needs. Likewise a loop of 100,000 iterations through For, and Join2 of
// functions that capture nothing.
func TestLazyForksDoNotAllocate(t *testing.T) {
	rt, p := forRT(t, 1)
	fork := func() {
		if _, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fib2(c, 20) }); err != nil {
			t.Fatal(err)
		}
	}
	fork() // fills the goroutine's pool of fork records
	if n := fewestAllocs(20, fork); n > 8 {
		t.Errorf("Run of fib(20) through Fork2: %v allocations, want only Run's own", n)
	}
	var sink atomic.Int64
	loop := func() {
		_, err := thread.Run(rt, p, func(c *thread.Ctx) error {
			return thread.For(c, 0, 100_000, func(_ *thread.Ctx, i int) { sink.Add(int64(i)) })
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fewestAllocs(20, loop); n > 8 {
		t.Errorf("Run of a 100,000-iteration For: %v allocations, want only Run's own", n)
	}
	join := func() {
		_, err := thread.Run(rt, p, func(c *thread.Ctx) int {
			sum := 0
			for range 10_000 {
				a, b := thread.Join2(c, one, two)
				sum += a + b
			}
			return sum
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	join()
	if n := testing.AllocsPerRun(20, join); n > 8 {
		t.Errorf("Run of 10,000 Join2 calls: %v allocations, want only Run's own", n)
	}
}

// Spawn and Join reuse the records of the handles they spent: fib(16)
// through them allocates one closure a spawn (it captures n) and nothing
// else but what Run itself needs.
func TestSpawnJoinAllocatesTheClosureOnly(t *testing.T) {
	rt, p := forRT(t, 1)
	const n = 16
	spawnFib := func() {
		if _, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fib(c, n) }); err != nil {
			t.Fatal(err)
		}
	}
	spawnFib() // fills the goroutine's pool of records
	closures := float64(spawns(n))
	if got := fewestAllocs(20, spawnFib); got > closures+8 {
		t.Errorf("Run of fib(%d) through Spawn: %v allocations, want %v closures and Run's own", n, got, closures)
	}
}

// one and two are Join2's functions that capture nothing.
func one(*thread.Ctx) int { return 1 }
func two(*thread.Ctx) int { return 2 }

// Misuse gets a clear error, never a hang or a crash.
func TestMisuseErrors(t *testing.T) {
	_, err := thread.Run(nil, fairness.NewOrder().Top(), func(*thread.Ctx) int { return 1 })
	assert.ErrorIs(t, err, thread.ErrNilRuntime)
	_, err = thread.Go(&runtime.Runtime{}, fairness.NewOrder().Top(), func(*thread.Ctx) int { return 1 }).Wait()
	assert.ErrorIs(t, err, thread.ErrNilRuntime, "a zero Runtime is no runtime")

	var zero thread.Handle[int]
	_, err = zero.Wait()
	assert.ErrorIs(t, err, thread.ErrInvalidHandle)
	var none *thread.Handle[int]
	_, err = none.Wait()
	assert.ErrorIs(t, err, thread.ErrInvalidHandle)
	assert.True(t, zero.Done(), "a zero handle's Wait returns at once")
	assert.True(t, none.Done(), "a nil handle's Wait returns at once")
	assert.Equal(t, fairness.Priority{}, none.Priority())

	rt, p := forRT(t, 1)
	v, err := thread.Run(rt, p, func(c *thread.Ctx) error {
		if _, err := thread.Join(c, &zero); !errors.Is(err, thread.ErrInvalidHandle) {
			return fmt.Errorf("Join of a zero handle: %v", err)
		}
		if _, err := thread.Join(c, none); !errors.Is(err, thread.ErrInvalidHandle) {
			return fmt.Errorf("Join of a nil handle: %v", err)
		}
		if err := rt.Close(); !errors.Is(err, runtime.ErrInThread) {
			return fmt.Errorf("Close inside a thread: %v", err)
		}
		return nil
	})
	assert.NoError(t, err)
	assert.NoError(t, v)

	for _, procs := range []int{-1, runtime.MaxProcs + 1, 1_000_000} {
		_, err := runtime.New(runtime.Config{Procs: procs})
		assert.ErrorIs(t, err, runtime.ErrInvalidConfig, "Procs %d", procs)
	}
}

// Durations at both ends of what New accepts keep the runtime working:
// spawn, join, sleep and await finish, and Close returns.
func TestExtremeDurations(t *testing.T) {
	huge := runtime.MaxDuration
	for name, cfg := range map[string]runtime.Config{
		"huge": {Procs: 2, RoundQuantum: huge, DealInterval: huge, Interrupt: huge, PromptBudget: huge},
		"tiny": {Procs: 2, RoundQuantum: 1, DealInterval: 1, Interrupt: 1, PromptBudget: 1},
	} {
		t.Run(name, func(t *testing.T) {
			rt, err := runtime.New(cfg)
			require.NoError(t, err)
			o := rt.Order()
			v, err := thread.Run(rt, o.Bottom(), func(c *thread.Ctx) int {
				h := thread.Spawn(c, o.Top(), func(c *thread.Ctx) int { return fib2(c, 15) })
				if err := thread.Sleep(c, time.Millisecond); err != nil {
					return -1
				}
				a := thread.Await(c, func() int { return 1 })
				b, err := thread.Join(c, h)
				if err != nil {
					return -1
				}
				return a + b
			})
			require.NoError(t, err)
			assert.Equal(t, 1+610, v)
			require.NoError(t, rt.Close())
		})
	}
}

// Panics that no Join or Wait returns reach Config.OnPanic: a detached
// thread's at once, a dropped handle's when the collector frees it. A panic
// that Join returned is not reported again.
func TestUnjoinedPanics(t *testing.T) {
	_, ps, crit := three(t, 50, 25, 25)
	reports := make(chan any, 8)
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit, OnPanic: func(_ fairness.Priority, v any, _ []byte) {
		reports <- v
	}})
	require.NoError(t, err)
	defer rt.Close()
	next := func() any {
		select {
		case v := <-reports:
			return v
		case <-time.After(10 * time.Second):
			return "no report"
		}
	}
	_, err = thread.Run(rt, ps[0], func(c *thread.Ctx) int {
		thread.Detach(c, ps[2], func(*thread.Ctx) { panic("detached") })
		h := thread.Spawn(c, c.Priority(), func(*thread.Ctx) int { panic("joined") })
		_, _ = thread.Join(c, h)
		return 0
	})
	require.NoError(t, err)
	assert.Equal(t, "detached", next())

	_, err = thread.Run(rt, ps[1], func(c *thread.Ctx) int {
		thread.Spawn(c, c.Priority(), func(*thread.Ctx) int { panic("dropped") })
		return 0 // the child runs as an orphan when this thread ends
	})
	require.NoError(t, err)
	var got any
	// The orphan must run and its handle be collected: collect until the
	// report comes, within a bound for hangs only.
	for end := time.Now().Add(closePatience); time.Now().Before(end); {
		goruntime.GC()
		select {
		case got = <-reports:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	assert.Equal(t, "dropped", got)
	select {
	case v := <-reports:
		t.Errorf("reported again: %v", v)
	default:
	}
}

// The goroutine running a thread carries the profiler label of its
// priority, so that CPU profiles split by priority.
func TestProfileLabels(t *testing.T) {
	_, ps, c := three(t, 50, 25, 25)
	rt := newRT(t, 2, c)
	started, done := make(chan struct{}), make(chan struct{})
	h := thread.Go(rt, ps[2], func(c *thread.Ctx) int {
		close(started)
		for {
			select {
			case <-done:
				return 0
			default:
				thread.Yield(c)
			}
		}
	})
	<-started
	var buf strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	close(done)
	_, err := h.Wait()
	require.NoError(t, err)
	want := fmt.Sprintf(`# labels: {%q:%q}`, runtime.ProfileLabel, ps[2].String())
	assert.Contains(t, buf.String(), want)
}

// While runtime/trace records, thread code runs inside regions named after
// its priority, so go tool trace shows which priority ran when ("User-defined
// regions").
func TestTraceRegions(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is already recording")
	}
	_, ps, c := three(t, 50, 25, 25)
	rt := newRT(t, 2, c)
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	for _, p := range []fairness.Priority{ps[0], ps[2]} {
		_, err := thread.Go(rt, p, func(c *thread.Ctx) int { return fib(c, 12) }).Wait()
		require.NoError(t, err)
	}
	trace.Stop()
	for _, p := range []fairness.Priority{ps[0], ps[2]} {
		assert.Contains(t, buf.String(), "fairly "+runtime.ProfileLabel+"="+p.String())
	}
	assert.NotContains(t, buf.String(), "fairly "+runtime.ProfileLabel+"="+ps[1].String(), "no thread ran at that priority")
}
