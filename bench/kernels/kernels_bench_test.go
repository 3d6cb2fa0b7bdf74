package kernels

import (
	"fmt"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
)

// benchSizes are small sizes, so that go test -bench . runs every kernel in
// a few minutes; the fairbench command runs the real sizes.
var benchSizes = map[string]int{
	"fib":        25,
	"fib-cutoff": 32,
	"uts":        8,
	"strassen":   256,
	"bfs":        200_000,
	"sort":       1_000_000,
}

// BenchmarkKernels runs each kernel's sequential, goroutine and fairly
// versions (the last with one and two workers) on the same instance, and
// its fine-grained fairly version with one and two workers.
func BenchmarkKernels(b *testing.B) {
	for _, k := range All() {
		b.Run(k.Name, func(b *testing.B) {
			inst := k.New(benchSizes[k.Name])
			loop := func(b *testing.B, run func()) {
				for b.Loop() {
					run()
				}
				require.NoError(b, inst.Check())
			}
			b.Run("Seq", func(b *testing.B) { loop(b, inst.Seq) })
			b.Run("Goroutines", func(b *testing.B) { loop(b, inst.Goroutines) })
			for _, procs := range []int{1, 2} {
				b.Run(fmt.Sprintf("Fairly/P=%d", procs), func(b *testing.B) {
					rt, p := newRuntime(b, procs)
					loop(b, func() { require.NoError(b, RunFairly(rt, p, inst)) })
				})
			}
			for _, procs := range []int{1, 2} {
				b.Run(fmt.Sprintf("Fine/P=%d", procs), func(b *testing.B) {
					rt, p := newRuntime(b, procs)
					loop(b, func() { require.NoError(b, RunFine(rt, p, inst.(FineInstance))) })
				})
			}
		})
	}
}

// BenchmarkSpawnJoin measures the cost of a fork and its join: fib(27)
// forking at every call, with fairly threads, with thread.Fork2's lazy
// forks and with goroutines, on one and two processors. ns/spawn is the
// time per fork.
func BenchmarkSpawnJoin(b *testing.B) {
	const n = 27
	want := fibIter(n)
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*FibSpawns(n)), "ns/spawn")
	}
	versions := []struct {
		name string
		run  func(rt *runtime.Runtime, p fairness.Priority, fib *Fib) error
	}{
		{"Fairly", func(rt *runtime.Runtime, p fairness.Priority, fib *Fib) error { return RunFairly(rt, p, fib) }},
		{"Fork2", func(rt *runtime.Runtime, p fairness.Priority, fib *Fib) error { return RunFine(rt, p, fib) }},
	}
	for _, procs := range []int{1, 2} {
		for _, v := range versions {
			b.Run(fmt.Sprintf("%s/P=%d", v.name, procs), func(b *testing.B) {
				rt, p := newRuntime(b, procs)
				fib := NewFib(n, 1)
				for b.Loop() {
					require.NoError(b, v.run(rt, p, fib))
				}
				require.NoError(b, fib.Check())
				report(b)
			})
		}
		b.Run(fmt.Sprintf("Goroutines/P=%d", procs), func(b *testing.B) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
			for b.Loop() {
				if got := FibGoAll(n); got != want {
					b.Fatalf("fib(%d) = %d, want %d", n, got, want)
				}
			}
			report(b)
		})
	}
}
