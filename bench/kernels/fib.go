package kernels

import (
	"fmt"
	"sync"

	"github.com/fairlyprompt/fairly/thread"
)

// DefaultFibCutoff is the cutoff of the fib-cutoff kernel: calls with
// n ≤ 20 run sequentially.
const DefaultFibCutoff = 20

// FibSeq computes the n-th Fibonacci number by naive recursion, the
// sequential baseline of the Fibonacci kernels.
func FibSeq(n int) int {
	if n < 2 {
		return n
	}
	return FibSeq(n-1) + FibSeq(n-2)
}

// FibCutoff is the fairly version of FibSeq: every call with n > cutoff
// spawns a thread for fib(n-1) at c's priority, computes fib(n-2) itself and
// joins; calls with n ≤ cutoff run FibSeq.
func FibCutoff(c *thread.Ctx, n, cutoff int) int {
	if n <= cutoff || n < 2 {
		return FibSeq(n)
	}
	h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return FibCutoff(c, n-1, cutoff) })
	b := FibCutoff(c, n-2, cutoff)
	return join(c, h) + b
}

// FibCutoffGo is FibCutoff with a goroutine and a sync.WaitGroup at every
// call with n > cutoff.
func FibCutoffGo(n, cutoff int) int {
	if n <= cutoff || n < 2 {
		return FibSeq(n)
	}
	var a int
	var wg sync.WaitGroup
	wg.Go(func() { a = FibCutoffGo(n-1, cutoff) })
	b := FibCutoffGo(n-2, cutoff)
	wg.Wait()
	return a + b
}

// FibSpawnAll is the finest-grain fairly Fibonacci: it spawns a thread at
// every call with n ≥ 2, so its time is dominated by the cost of spawn and
// join.
func FibSpawnAll(c *thread.Ctx, n int) int { return FibCutoff(c, n, 1) }

// FibGoAll is FibSpawnAll with a goroutine and a sync.WaitGroup at every
// call with n ≥ 2.
func FibGoAll(n int) int { return FibCutoffGo(n, 1) }

// FibFork is the fine-grained fairly Fibonacci, as the documentation of
// thread.Fork2 writes it: a lazy fork at every call with n ≥ 2 and no
// cutoff. A fork that no other worker takes costs a plain call and no
// allocation, so on a busy machine FibFork runs within a small factor of
// FibSeq, and it spreads over idle workers when there are any.
func FibFork(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Fork2(c, FibFork, n-1, n-2)
	return a + b
}

// FibForkCutoff is FibCutoff written with thread.Fork2: a lazy fork at every
// call with n > cutoff, which allocates nothing unless another worker
// takes it; calls with n ≤ cutoff run FibSeq.
func FibForkCutoff(c *thread.Ctx, n, cutoff int) int { return fibFork(c, fibArg{n, cutoff}) }

// fibArg is the argument of fibFork: Fork2 passes one value.
type fibArg struct{ n, cutoff int }

func fibFork(c *thread.Ctx, a fibArg) int {
	if a.n <= a.cutoff || a.n < 2 {
		return FibSeq(a.n)
	}
	x, y := thread.Fork2(c, fibFork, fibArg{a.n - 1, a.cutoff}, fibArg{a.n - 2, a.cutoff})
	return x + y
}

// FibSpawns is the number of forks FibSpawnAll and FibGoAll make for
// fib(n): one per call with n ≥ 2, which is fib(n+1) − 1.
func FibSpawns(n int) int {
	if n < 2 {
		return 0
	}
	return fibIter(n+1) - 1
}

// fibIter computes fib(n) by iteration, the reference of Fib.Check.
func fibIter(n int) int {
	a, b := 0, 1
	for range n {
		a, b = b, a+b
	}
	return a
}

// Fib is an instance of a Fibonacci kernel. Its fields may be changed
// between runs.
type Fib struct {
	N      int // which Fibonacci number to compute
	Cutoff int // the parallel versions recurse sequentially at n ≤ Cutoff; 1 forks at every call

	result int
}

// NewFib returns a Fibonacci instance that computes fib(n) with the given
// cutoff. n below 0 is raised to 0.
func NewFib(n, cutoff int) *Fib { return &Fib{N: max(n, 0), Cutoff: cutoff} }

// Seq computes fib(N) with FibSeq.
func (f *Fib) Seq() { f.result = FibSeq(f.N) }

// Goroutines computes fib(N) with FibCutoffGo.
func (f *Fib) Goroutines() { f.result = FibCutoffGo(f.N, f.Cutoff) }

// Fairly computes fib(N) with FibCutoff.
func (f *Fib) Fairly(c *thread.Ctx) { f.result = FibCutoff(c, f.N, f.Cutoff) }

// Forked computes fib(N) with FibForkCutoff: Fairly's grain, forking with
// thread.Fork2 instead of thread.Spawn.
func (f *Fib) Forked(c *thread.Ctx) { f.result = FibForkCutoff(c, f.N, f.Cutoff) }

// Fine computes fib(N) with FibFork, whatever the Cutoff: without a
// cutoff, fib-cutoff is fib.
func (f *Fib) Fine(c *thread.Ctx) { f.result = FibFork(c, f.N) }

// FineGoroutines computes fib(N) with FibGoAll, whatever the Cutoff.
func (f *Fib) FineGoroutines() { f.result = FibGoAll(f.N) }

// Check compares the last result with fib(N) computed by iteration.
func (f *Fib) Check() error {
	if want := fibIter(f.N); f.result != want {
		return fmt.Errorf("%w: fib(%d) = %d, want %d", ErrWrongResult, f.N, f.result, want)
	}
	return nil
}
