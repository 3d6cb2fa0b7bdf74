// Package kernels holds the compute kernels of fairly's benchmark suite, the
// five of the paper's evaluation (§6.2.2): Fibonacci (at fine grain and with
// a sequential cutoff), Unbalanced Tree Search, Strassen matrix
// multiplication, breadth-first search of a random graph and sample sort.
//
// Every kernel comes in three versions that share the algorithm and the
// grain: a sequential baseline, a fairly version that forks threads with
// thread.Spawn and thread.Join, and a plain-goroutine version (go plus
// sync.WaitGroup) as a Go programmer would write it without fairly. Parallel
// versions divide their work with binary spawn trees, so the oldest threads
// hold the most work, as fork-potential scheduling expects. Inputs are
// generated deterministically, and each kernel checks its own result.
package kernels

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Instance is one prepared input of a kernel at a given size. Runs of an
// instance reuse its input and buffers, so an instance must not run two
// versions at once; it may run any number of times one after another.
type Instance interface {
	// Seq runs the sequential baseline: the same algorithm and grain,
	// without forks.
	Seq()
	// Goroutines runs the plain-goroutine version: a go statement and a
	// sync.WaitGroup at every fork, with the same grain.
	Goroutines()
	// Fairly runs the fairly version inside thread c: it forks at
	// c.Priority() and joins with thread.Join, and never blocks its worker.
	// A failure of a child is raised again as a panic, which thread.Run
	// reports as its error.
	Fairly(c *thread.Ctx)
	// Check validates the result of the last run, whichever version made
	// it, and returns an error wrapping ErrWrongResult when it is wrong.
	Check() error
}

// Kernel describes a compute kernel and makes its instances.
type Kernel struct {
	Name        string // "fib", "fib-cutoff", "uts", "strassen", "bfs" or "sort"
	Doc         string // one line on what the kernel computes
	Unit        string // what a size means, e.g. "n" or "vertices"
	DefaultSize int    // a size that runs for about a second on two cores (fib: its forking versions)
	PaperSize   int    // the size of the paper's evaluation, or the nearest sensible one
	// New prepares an instance of the given size, generating its input.
	// Sizes below the kernel's smallest meaningful one are raised to it.
	New func(size int) Instance
}

// ErrUnknownKernel is returned by Lookup for a name no kernel has.
var ErrUnknownKernel = errors.New("unknown kernel")

// ErrWrongResult is wrapped by the errors of Instance.Check.
var ErrWrongResult = errors.New("wrong kernel result")

// All returns the compute kernels, in the order of the paper's tables.
func All() []Kernel {
	return []Kernel{
		{
			Name: "fib", Unit: "n", DefaultSize: 32, PaperSize: 45,
			Doc: "naive recursive Fibonacci, forking at every call (finest grain)",
			New: func(n int) Instance { return NewFib(n, 1) },
		},
		{
			Name: "fib-cutoff", Unit: "n", DefaultSize: 40, PaperSize: 45,
			Doc: fmt.Sprintf("recursive Fibonacci, sequential at or below n = %d", DefaultFibCutoff),
			New: func(n int) Instance { return NewFib(n, DefaultFibCutoff) },
		},
		{
			Name: "uts", Unit: "depth", DefaultSize: utsDefaultDepth, PaperSize: 11,
			Doc: fmt.Sprintf("unbalanced tree search: geometric branching of mean %g, fib(%d) at every node",
				utsBranching, utsNodeFib),
			New: func(depth int) Instance { return newUTS(depth) },
		},
		{
			Name: "strassen", Unit: "matrix side", DefaultSize: 1024, PaperSize: 2048,
			Doc: fmt.Sprintf("Strassen multiplication of int64 matrices, naive at or below side %d",
				strassenCutoff),
			New: func(n int) Instance { return newStrassen(n) },
		},
		{
			Name: "bfs", Unit: "vertices", DefaultSize: 2_000_000, PaperSize: 15_000_000,
			Doc: fmt.Sprintf("level-synchronous breadth-first search of a random graph of mean degree %d",
				2*bfsEdgesPerVertex),
			New: func(n int) Instance { return newBFS(n) },
		},
		{
			Name: "sort", Unit: "keys", DefaultSize: 8_000_000, PaperSize: 128_000_000,
			Doc: fmt.Sprintf("sample sort of random 64-bit keys, slices.Sort at or below %d keys",
				sortCutoff),
			New: func(n int) Instance { return newSort(n) },
		},
	}
}

// Lookup finds a kernel by name. An unknown name gives an error wrapping
// ErrUnknownKernel that lists the known ones.
func Lookup(name string) (Kernel, error) {
	all := All()
	names := make([]string, len(all))
	for i, k := range all {
		if k.Name == name {
			return k, nil
		}
		names[i] = k.Name
	}
	return Kernel{}, fmt.Errorf("%w %q (known kernels: %s)", ErrUnknownKernel, name, strings.Join(names, ", "))
}

// RunFairly runs the fairly version of inst as a thread of rt at priority p
// and waits for it. The error is thread.Run's: the runtime is closed, or a
// thread of the kernel panicked.
func RunFairly(rt *runtime.Runtime, p fairness.Priority, inst Instance) error {
	_, err := thread.Run(rt, p, func(c *thread.Ctx) struct{} {
		inst.Fairly(c)
		return struct{}{}
	})
	return err
}
