package kernels

import (
	"sync"

	"github.com/fairlyprompt/fairly/thread"
)

// par says how a kernel forks: not at all (the sequential baseline), with
// plain goroutines, or with fairly threads. Each kernel is written once
// against it, so its versions share the algorithm and the grain and differ
// only in how a fork is carried out.
//
// A fine par has no grain: reduce and parFor divide down to single
// elements, and kernels drop their own hand-tuned sizes for the
// algorithm's natural base case. In fairly mode a fine par forks as a Go
// user of fairly would, with no cutoff to choose: thread.Fork2 at every
// division of reduce and thread.For over every element of parFor, both of
// which fork lazily, only when another worker wants work.
type par struct {
	mode mode
	c    *thread.Ctx // the running thread, in fairly mode
	fine bool        // no grain: fork at every division, loop over every element
}

// mode is how a par forks.
type mode uint8

const (
	sequential mode = iota
	goroutines
	threads
)

// seq and gor are the sequential and goroutine pars; fairly gives thread
// c's.
var (
	seq = par{mode: sequential}
	gor = par{mode: goroutines}
)

func fairly(c *thread.Ctx) par { return par{threads, c, false} }

// fineGor and fineFairly are the fine-grained pars: a go statement at every
// division, or thread c forking lazily with thread.Fork2 and thread.For.
var fineGor = par{mode: goroutines, fine: true}

func fineFairly(c *thread.Ctx) par { return par{threads, c, true} }

// strideLen is how many elements a long sequential loop of a fairly leaf
// handles between two preemption points: a small fraction of an interrupt
// for the slowest loop, so that its worker answers on time.
const strideLen = 1 << 13

// point is a preemption point in fairly mode and nothing otherwise. Leaves
// that loop for a long time call it now and then, so that their worker can
// serve requests for work and switch priorities on time.
func (p par) point() {
	if p.mode == threads {
		thread.Yield(p.c)
	}
}

// stride runs body on [lo, hi) in pieces of strideLen elements; in fairly
// mode it passes a preemption point (thread.Yield) before each piece, so a
// leaf that loops long, as big sizes make them, still lets its worker switch
// to more urgent threads on time.
func (p par) stride(lo, hi int, body func(lo, hi int)) {
	for lo < hi {
		p.point()
		end := min(lo+strideLen, hi)
		body(lo, end)
		lo = end
	}
}

// join is thread.Join for kernels, whose children cannot fail unless they
// panic: the failure is raised again in the parent, so it travels up to the
// thread.Run that started the kernel and comes back as its error.
func join[T any](c *thread.Ctx, h *thread.Handle[T]) T {
	v, err := thread.Join(c, h)
	if err != nil {
		panic(err)
	}
	return v
}

// reduce divides [lo, hi) in halves down to pieces of at most grain
// elements (one element for a fine par), forking the right half at every
// division (a binary spawn tree, so the oldest threads hold the most work),
// runs leaf on each piece and combines the results in order. The
// sequential par hands the whole range to leaf at once.
func reduce[T any](p par, lo, hi, grain int, leaf func(p par, lo, hi int) T, combine func(a, b T) T) T {
	if p.fine {
		grain = 1
	}
	if hi-lo <= grain || p.mode == sequential {
		return leaf(p, lo, hi)
	}
	if p.mode == threads && p.fine {
		return forkReduce(p.c, span{lo, hi}, leaf, combine)
	}
	mid := lo + (hi-lo)/2
	if p.mode == threads {
		h := thread.Spawn(p.c, p.c.Priority(), func(c *thread.Ctx) T {
			return reduce(fairly(c), mid, hi, grain, leaf, combine)
		})
		left := reduce(p, lo, mid, grain, leaf, combine)
		return combine(left, join(p.c, h))
	}
	var right T
	var wg sync.WaitGroup
	wg.Go(func() { right = reduce(p, mid, hi, grain, leaf, combine) })
	left := reduce(p, lo, mid, grain, leaf, combine)
	wg.Wait()
	return combine(left, right)
}

// span is a range [lo, hi) of indices, the argument of forkReduce's forks.
type span struct{ lo, hi int }

// forkReduce is reduce for a fine fairly par: a binary fork tree down to
// single elements, each fork a thread.Fork2, which costs a plain call unless
// another worker takes it. The recursive function is made once per call of
// forkReduce and is the same at every fork, so the forks allocate nothing.
func forkReduce[T any](c *thread.Ctx, s span, leaf func(p par, lo, hi int) T, combine func(a, b T) T) T {
	var split func(c *thread.Ctx, s span) T
	split = func(c *thread.Ctx, s span) T {
		if s.hi-s.lo <= 1 {
			return leaf(fineFairly(c), s.lo, s.hi)
		}
		mid := s.lo + (s.hi-s.lo)/2
		a, b := thread.Fork2(c, split, span{s.lo, mid}, span{mid, s.hi})
		return combine(a, b)
	}
	return split(c, s)
}

// parFor is reduce for leaves without a result. A fine fairly par runs it
// as thread.For over every element, which splits the range lazily.
func parFor(p par, lo, hi, grain int, leaf func(p par, lo, hi int)) {
	if p.mode == threads && p.fine {
		err := thread.For(p.c, lo, hi, func(c *thread.Ctx, i int) { leaf(fineFairly(c), i, i+1) })
		if err != nil {
			panic(err) // as join does: the failure travels up to thread.Run
		}
		return
	}
	reduce(p, lo, hi, grain,
		func(p par, lo, hi int) struct{} { leaf(p, lo, hi); return struct{}{} },
		func(struct{}, struct{}) struct{} { return struct{}{} })
}

// mix is the finaliser of splitmix64: a cheap bijective hash that turns
// consecutive or structured values into well-spread ones. Every input of the
// package is derived from a seed through it, so runs are reproducible.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// seed is where every generated input starts.
const seed uint64 = 0x5eed_fa1e_2019

// unit maps a hash to a float64 in [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }
