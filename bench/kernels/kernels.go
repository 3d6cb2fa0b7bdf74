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
//
// Every instance also has fine-grained versions (FineInstance): the same
// algorithm with no hand-tuned grain, forking at every recursive call and
// looping in parallel over every element, down to the algorithm's natural
// base case only. Its fairly version uses thread.Fork2 and thread.For, whose
// lazy forks cost a plain call unless another worker takes them, as a Go
// user of fairly would write it without choosing a cutoff.
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

// FineInstance is an Instance with fine-grained versions: no hand-tuned
// grain or cutoff, a fork at every recursive call and a parallel loop over
// every element, down to the algorithm's natural base case only (Kernel.Fine
// says which). Every instance of this package is one; Check validates their
// results too.
type FineInstance interface {
	Instance
	// Fine runs the fine-grained fairly version inside thread c, with
	// thread.Fork2 at every recursive call and thread.For over every
	// element, at c's priority. Failures panic, as in Fairly.
	Fine(c *thread.Ctx)
	// FineGoroutines runs the fine-grained version with a go statement and
	// a sync.WaitGroup at every fork of Fine: a binary tree of goroutines
	// down to single elements where Fine uses thread.For.
	FineGoroutines()
}

// Kernel describes a compute kernel and makes its instances.
type Kernel struct {
	Name        string // "fib", "fib-cutoff", "uts", "strassen", "bfs" or "sort"
	Doc         string // one line on what the kernel computes
	Unit        string // what a size means, e.g. "n" or "vertices"
	DefaultSize int    // a size that runs for about a second on two cores (fib: its forking versions)
	PaperSize   int    // the size of the paper's evaluation, or the nearest sensible one
	// Fine says what the fine-grained versions (FineInstance) do, and
	// their base case.
	Fine string
	// FineOf names the kernel whose fine-grained versions this kernel's
	// are, when they coincide ("fib" for fib-cutoff: without its cutoff it
	// is fib); Table 2 measures them there.
	FineOf string
	// GoroutinesFine says the Goroutines version already forks at every
	// call, so FineGoroutines is the same program.
	GoroutinesFine bool
	// FineGoroutinesCost, when set, says why FineGoroutines is too costly
	// for the benchmark suite: it starts a goroutine per element, millions
	// a run at the default size, and takes several times the sequential
	// time (the value says how many, measured on two cores at the default
	// size).
	FineGoroutinesCost string
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
			Doc:            "naive recursive Fibonacci, forking at every call (finest grain)",
			Fine:           "thread.Fork2 at every call (FibFork), base case n < 2",
			GoroutinesFine: true,
			New:            func(n int) Instance { return NewFib(n, 1) },
		},
		{
			Name: "fib-cutoff", Unit: "n", DefaultSize: 40, PaperSize: 45,
			Doc:    fmt.Sprintf("recursive Fibonacci, sequential at or below n = %d", DefaultFibCutoff),
			Fine:   "fib's: without its cutoff, fib-cutoff is fib",
			FineOf: "fib",
			New:    func(n int) Instance { return NewFib(n, DefaultFibCutoff) },
		},
		{
			Name: "uts", Unit: "depth", DefaultSize: utsDefaultDepth, PaperSize: 11,
			Doc: fmt.Sprintf("unbalanced tree search: geometric branching of mean %g, fib(%d) at every node",
				utsBranching, utsNodeFib),
			Fine:           "thread.Fork2 over the children of every node, base case a leaf",
			GoroutinesFine: true,
			New:            func(depth int) Instance { return newUTS(depth) },
		},
		{
			Name: "strassen", Unit: "matrix side", DefaultSize: 1024, PaperSize: 2048,
			Doc: fmt.Sprintf("Strassen multiplication of int64 matrices, naive at or below side %d",
				strassenCutoff),
			Fine: fmt.Sprintf("thread.For over the 7 products of every level and over every row, naive at or below side %d "+
				"(the algorithm's crossover: there the naive product beats another level of recursion on one core)", strassenCutoff),
			New: func(n int) Instance { return newStrassen(n) },
		},
		{
			Name: "bfs", Unit: "vertices", DefaultSize: 2_000_000, PaperSize: 15_000_000,
			Doc: fmt.Sprintf("level-synchronous breadth-first search of a random graph of mean degree %d",
				2*bfsEdgesPerVertex),
			Fine:               "thread.For over every vertex of each frontier, the next frontier filled through an atomic counter",
			FineGoroutinesCost: "a goroutine per vertex, 2 per vertex a run: about 9× sequential",
			New:                func(n int) Instance { return newBFS(n) },
		},
		{
			Name: "sort", Unit: "keys", DefaultSize: 8_000_000, PaperSize: 128_000_000,
			Doc: fmt.Sprintf("sample sort of random 64-bit keys, slices.Sort at or below %d keys",
				sortCutoff),
			Fine: fmt.Sprintf("sample sort into √n buckets with thread.For over every key and atomic bucket counts, "+
				"slices.Sort at or below %d keys (where the sample would be as large as the input)", sortOversample*sortOversample),
			FineGoroutinesCost: "a goroutine per key, 5 per key a run: about 40× sequential",
			New:                func(n int) Instance { return newSort(n) },
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
	return RunVersion(rt, p, inst.Fairly)
}

// RunFine is RunFairly for the fine-grained fairly version.
func RunFine(rt *runtime.Runtime, p fairness.Priority, inst FineInstance) error {
	return RunVersion(rt, p, inst.Fine)
}

// RunVersion runs version, one of an instance's fairly versions, as a
// thread of rt at priority p and waits for it, with RunFairly's errors.
func RunVersion(rt *runtime.Runtime, p fairness.Priority, version func(c *thread.Ctx)) error {
	_, err := thread.Run(rt, p, func(c *thread.Ctx) struct{} {
		version(c)
		return struct{}{}
	})
	return err
}
