package thread_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

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
			if st := rt.Stats(); procs > 1 && st.Promotions == 0 {
				t.Errorf("the loop never split at P=%d: %+v", procs, st)
			}
		})
	}
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
