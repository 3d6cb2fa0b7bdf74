package thread_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strconv"
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

// affine is the map x ↦ a·x + b on uint64 (wrapping): composing them is
// associative and not commutative, and exact, so that a parallel reduction
// that combined two parts out of order or twice would give another answer.
type affine struct{ a, b uint64 }

// then is f followed by g.
func (f affine) then(g affine) affine { return affine{g.a * f.a, g.a*f.b + g.b} }

func thenAffine(f, g affine) affine { return f.then(g) }

func affineOf(_ *thread.Ctx, i int) affine { return affine{uint64(2*i + 3), uint64(i)} }

// upTo is [0, 1, ..., n-1].
func upTo(n int) []int {
	in := make([]int, n)
	for i := range in {
		in[i] = i
	}
	return in
}

// Map, Reduce and MapReduce give the sequential answer at every P, the
// order-sensitive reductions included, on slices of every size.
func TestMapReduceSequentialAnswers(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			rt, p := forRT(t, procs)
			for _, n := range []int{0, 1, 2, 1000, 1_000_000} {
				in, fs := upTo(n), make([]affine, n)
				wantSum, wantComp := 0, affine{1, 0}
				for i := range in {
					fs[i] = affineOf(nil, i)
					wantSum += i
					wantComp = wantComp.then(fs[i])
				}
				err := runErr(rt, p, func(c *thread.Ctx) error {
					got, err := thread.Map(c, in, affineOf)
					if err != nil || got == nil || !slices.Equal(got, fs) {
						return fmt.Errorf("Map n=%d: len %d, %v", n, len(got), err)
					}
					sum, err := thread.Reduce(c, in, 0, func(a, b int) int { return a + b })
					if err != nil || sum != wantSum {
						return fmt.Errorf("Reduce sum n=%d: %d, %v; want %d", n, sum, err, wantSum)
					}
					comp, err := thread.Reduce(c, fs, affine{1, 0}, thenAffine)
					if err != nil || comp != wantComp {
						return fmt.Errorf("Reduce composition n=%d: %v, %v; want %v", n, comp, err, wantComp)
					}
					comp, err = thread.MapReduce(c, in, affineOf, affine{1, 0}, thenAffine)
					if err != nil || comp != wantComp {
						return fmt.Errorf("MapReduce composition n=%d: %v, %v; want %v", n, comp, err, wantComp)
					}
					return nil
				})
				require.NoError(t, err)
			}
		})
	}
}

// String concatenation, associative and not commutative, gives the
// sequential string when the slice is split among workers; so does Map's
// order.
func TestMapReduceOrder(t *testing.T) {
	rt, p := forRT(t, 2)
	const n = 2000
	in := upTo(n)
	var want strings.Builder
	for i := range in {
		want.WriteString(strconv.Itoa(i) + ",")
	}
	// Each element costs a few microseconds, so that idle workers take
	// halves of the slice.
	item := func(_ *thread.Ctx, i int) string {
		s := ""
		for range 20 {
			s = fmt.Sprint(i) + ","
		}
		return s
	}
	for round := range 5 {
		before := rt.Stats().Promotions
		got, err := thread.Run(rt, p, func(c *thread.Ctx) string {
			s, err := thread.MapReduce(c, in, item, "", func(a, b string) string { return a + b })
			require.NoError(t, err)
			strs, err := thread.Map(c, in, item)
			require.NoError(t, err)
			s2, err := thread.Reduce(c, strs, "", func(a, b string) string { return a + b })
			require.NoError(t, err)
			require.Equal(t, s, s2, "Reduce of Map")
			return s
		})
		require.NoError(t, err)
		require.Equal(t, want.String(), got, "round %d", round)
		t.Logf("round %d: %d splits", round, rt.Stats().Promotions-before)
	}
}

// A panic in f or combine comes back as a *PanicError with its value, once
// every call under way has returned.
func TestMapReducePanic(t *testing.T) {
	rt, p := forRT(t, 2)
	const n = 200_000
	in := upTo(n)
	var running, after atomic.Int64
	var returned atomic.Bool
	watch := func(i int) {
		running.Add(1)
		if returned.Load() {
			after.Add(1)
		}
		if i == 177_777 {
			panic("element 177777")
		}
		for range i % 32 { // uneven elements
			_ = fmt.Sprint()
		}
		running.Add(-1)
	}
	calls := map[string]func(c *thread.Ctx) error{
		"Map": func(c *thread.Ctx) error {
			out, err := thread.Map(c, in, func(_ *thread.Ctx, x int) int { watch(x); return x })
			if out != nil {
				return fmt.Errorf("Map gave %d results with %v", len(out), err)
			}
			return err
		},
		"Reduce": func(c *thread.Ctx) error {
			_, err := thread.Reduce(c, in, 0, func(a, b int) int { watch(b); return a + b })
			return err
		},
		"MapReduce": func(c *thread.Ctx) error {
			v, err := thread.MapReduce(c, in, func(_ *thread.Ctx, x int) int { watch(x); return x }, 0,
				func(a, b int) int { return a + b })
			if v != 0 {
				return fmt.Errorf("MapReduce gave %d with %v", v, err)
			}
			return err
		},
		"MapReduce/combine": func(c *thread.Ctx) error {
			_, err := thread.MapReduce(c, in, func(_ *thread.Ctx, x int) int { return x }, 0,
				func(a, b int) int { watch(b); return a + b })
			return err
		},
	}
	for name, call := range calls {
		returned.Store(false)
		running.Store(0)
		err := runErr(rt, p, func(c *thread.Ctx) error {
			err := call(c)
			returned.Store(true)
			return err
		})
		var pe *thread.PanicError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, "element 177777", pe.Value, name)
		assert.NotEmpty(t, pe.Stack, name)
		assert.Equal(t, int64(1), running.Load(), "%s: only the panicking call is unfinished", name)
	}
	assert.Zero(t, after.Load(), "calls made after the loop returned")
}

func TestMapReduceNilFunction(t *testing.T) {
	rt, p := forRT(t, 1)
	err := runErr(rt, p, func(c *thread.Ctx) error {
		var errs []error
		out, err := thread.Map[int, int](c, []int{1}, nil)
		errs = append(errs, err)
		if out != nil {
			return errors.New("Map with nil f gave a slice")
		}
		_, err = thread.Reduce(c, []int{1}, 0, nil)
		errs = append(errs, err)
		_, err = thread.MapReduce[int](c, nil, nil, 0, func(a, b int) int { return a + b })
		errs = append(errs, err)
		_, err = thread.MapReduce(c, []int{1}, func(_ *thread.Ctx, x int) int { return x }, 0, nil)
		errs = append(errs, err)
		for i, err := range errs {
			if !errors.Is(err, thread.ErrNilFunction) {
				return fmt.Errorf("call %d: %v, want ErrNilFunction", i, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// Empty and nil slices give an empty result and the identity, without
// calling anything.
func TestMapReduceEmpty(t *testing.T) {
	rt, p := forRT(t, 1)
	never := func(*thread.Ctx, string) int { panic("called") }
	err := runErr(rt, p, func(c *thread.Ctx) error {
		for _, in := range [][]string{nil, {}} {
			out, err := thread.Map(c, in, never)
			if out == nil || len(out) != 0 || err != nil {
				return fmt.Errorf("Map(%#v) = %#v, %v", in, out, err)
			}
			s, err := thread.Reduce(c, in, "id", func(a, b string) string { panic("called") })
			if s != "id" || err != nil {
				return fmt.Errorf("Reduce(%#v) = %q, %v", in, s, err)
			}
			v, err := thread.MapReduce(c, in, never, 7, func(a, b int) int { panic("called") })
			if v != 7 || err != nil {
				return fmt.Errorf("MapReduce(%#v) = %d, %v", in, v, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// When the context is cancelled during a loop, every part stops at its
// next preemption point and the loop returns the context's error once no
// call is running: nothing is called after it returned. For, which shares
// the splitting, behaves the same. A context already done when the loop
// starts stops it before its first call.
func TestMapReduceCancelled(t *testing.T) {
	rt, p := forRT(t, 2)
	const n = 100_000
	in := upTo(n)
	loops := map[string]func(c *thread.Ctx, f func(int)) error{
		"For": func(c *thread.Ctx, f func(int)) error {
			return thread.For(c, 0, n, func(_ *thread.Ctx, i int) { f(i) })
		},
		"Map": func(c *thread.Ctx, f func(int)) error {
			_, err := thread.Map(c, in, func(_ *thread.Ctx, x int) int { f(x); return x })
			return err
		},
		"Reduce": func(c *thread.Ctx, f func(int)) error {
			_, err := thread.Reduce(c, in, 0, func(a, b int) int { f(b); return a + b })
			return err
		},
		"MapReduce": func(c *thread.Ctx, f func(int)) error {
			_, err := thread.MapReduce(c, in, func(_ *thread.Ctx, x int) int { f(x); return x }, 0,
				func(a, b int) int { return a + b })
			return err
		},
	}
	for name, loop := range loops {
		ctx, cancel := context.WithCancel(context.Background())
		var calls, after atomic.Int64
		var returned atomic.Bool
		before := rt.Stats().Promotions
		err := runErrContext(ctx, rt, p, func(c *thread.Ctx) error {
			err := loop(c, func(i int) {
				if calls.Add(1) == 1000 {
					cancel()
				}
				for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
				}
				if returned.Load() {
					after.Add(1)
				}
			})
			returned.Store(true)
			return err
		})
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.Zero(t, after.Load(), "%s: calls after the loop returned", name)
		assert.Less(t, calls.Load(), int64(n), "%s: the loop did not stop", name)
		t.Logf("%s: %d calls, %d splits", name, calls.Load(), rt.Stats().Promotions-before)

		calls.Store(0)
		err = runErrContext(ctx, rt, p, func(c *thread.Ctx) error { return loop(c, func(int) { calls.Add(1) }) })
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.Zero(t, calls.Load(), "%s: calls with a done context", name)
	}
}

// runErrContext is runErr with a context.
func runErrContext(ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(c *thread.Ctx) error) error {
	v, err := thread.RunContext(ctx, rt, p, f)
	if err != nil {
		return err
	}
	return v
}

// A loop that no other worker splits allocates nothing but Map's result.
func TestMapReduceDoNotAllocate(t *testing.T) {
	rt, p := forRT(t, 1)
	in := make([]int, 100_000)
	square := func(_ *thread.Ctx, x int) int { return x * x }
	add := func(a, b int) int { return a + b }
	var sink atomic.Int64
	for name, call := range map[string]func(c *thread.Ctx) error{
		"Map": func(c *thread.Ctx) error {
			out, err := thread.Map(c, in, square)
			sink.Add(int64(len(out)))
			return err
		},
		"Reduce": func(c *thread.Ctx) error {
			v, err := thread.Reduce(c, in, 0, add)
			sink.Add(int64(v))
			return err
		},
		"MapReduce": func(c *thread.Ctx) error {
			v, err := thread.MapReduce(c, in, square, 0, add)
			sink.Add(int64(v))
			return err
		},
	} {
		// Counted inside the thread: how Run itself starts a thread (on the
		// calling goroutine or through a worker) varies from run to run.
		var n float64
		require.NoError(t, runErr(rt, p, func(c *thread.Ctx) error {
			n = fewestAllocs(20, func() { require.NoError(t, call(c)) })
			return nil
		}))
		if n > 1 {
			t.Errorf("%s over 100,000 elements: %v allocations, want at most the result", name, n)
		}
	}
}

var (
	benchSquare = func(_ *thread.Ctx, x int) int { return x * x }
	benchAdd    = func(a, b int) int { return a + b }
)

// BenchmarkMapReduce: the sum of the squares of 1M ints through MapReduce
// and Reduce, and their squares through Map, against the plain loop and
// one goroutine per GOMAXPROCS chunk, and against the plain loop making
// the same calls as fairly through function values (seq-calls); reports ns
// and allocations per element.
func BenchmarkMapReduce(b *testing.B) {
	const n = 1_000_000
	in := upTo(n)
	square, add := benchSquare, benchAdd // not known here: called, not inlined
	var sink int
	// seq computes the part [lo, hi) of a kind sequentially, into out for
	// Map (allocated per call, as Map allocates its result).
	kinds := []struct {
		name   string
		hasOut bool
		seq    func(out []int, lo, hi int) int
		calls  func(out []int) int
		fairly func(c *thread.Ctx) (int, error)
	}{
		{"mapreduce", false, func(_ []int, lo, hi int) int {
			s := 0
			for _, x := range in[lo:hi] {
				s += x * x
			}
			return s
		}, func([]int) int {
			s := 0
			for _, x := range in {
				s = add(s, square(nil, x))
			}
			return s
		}, func(c *thread.Ctx) (int, error) { return thread.MapReduce(c, in, square, 0, add) }},
		{"reduce", false, func(_ []int, lo, hi int) int {
			s := 0
			for _, x := range in[lo:hi] {
				s += x
			}
			return s
		}, func([]int) int {
			s := 0
			for _, x := range in {
				s = add(s, x)
			}
			return s
		}, func(c *thread.Ctx) (int, error) { return thread.Reduce(c, in, 0, add) }},
		{"map", true, func(out []int, lo, hi int) int {
			for i := lo; i < hi; i++ {
				out[i] = in[i] * in[i]
			}
			return out[lo]
		}, func(out []int) int {
			for i, x := range in {
				out[i] = square(nil, x)
			}
			return out[0]
		}, func(c *thread.Ctx) (int, error) {
			out, err := thread.Map(c, in, square)
			return len(out), err
		}},
	}
	newOut := func(hasOut bool) []int {
		if hasOut {
			return make([]int, n)
		}
		return nil
	}
	perElement := func(b *testing.B, m0 *goruntime.MemStats) {
		var m1 goruntime.MemStats
		goruntime.ReadMemStats(&m1)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N)/n, "allocs/elem")
	}
	for _, k := range kinds {
		b.Run(k.name+"/seq", func(b *testing.B) {
			var m0 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			for b.Loop() {
				sink += k.seq(newOut(k.hasOut), 0, n)
			}
			perElement(b, &m0)
		})
		// The plain loop making the calls that fairly makes: f and combine
		// through function values, which the compiler cannot inline.
		b.Run(k.name+"/seq-calls", func(b *testing.B) {
			var m0 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			for b.Loop() {
				sink += k.calls(newOut(k.hasOut))
			}
			perElement(b, &m0)
		})
		for _, procs := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/fairly/P=%d", k.name, procs), func(b *testing.B) {
				rt, p := benchRT(b, procs)
				var m0 goruntime.MemStats
				goruntime.ReadMemStats(&m0)
				for b.Loop() {
					v, err := thread.Run(rt, p, func(c *thread.Ctx) int {
						v, err := k.fairly(c)
						if err != nil {
							panic(err)
						}
						return v
					})
					if err != nil {
						b.Fatal(err)
					}
					sink += v
				}
				perElement(b, &m0)
			})
		}
		b.Run(k.name+"/goroutines", func(b *testing.B) {
			procs := goruntime.GOMAXPROCS(0)
			var m0 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			for b.Loop() {
				parts, out := make([]int, procs), newOut(k.hasOut)
				var wg sync.WaitGroup
				for j := range procs {
					wg.Go(func() { parts[j] = k.seq(out, j*n/procs, (j+1)*n/procs) })
				}
				wg.Wait()
				for _, v := range parts {
					sink += v
				}
			}
			perElement(b, &m0)
		})
	}
	_ = sink
}
