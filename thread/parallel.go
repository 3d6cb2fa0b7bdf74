package thread

import (
	"runtime/debug"

	"github.com/fairlyprompt/fairly/internal/engine"
)

// For calls body(c, i) for every i in [lo, hi), in parallel where workers
// are free, at c's priority, and returns when every call has returned.
//
// There is no grain to choose: For runs the iterations in order, on the
// calling thread, and splits off the second half of what remains only when
// another worker wants work and none is queued (lazy binary splitting).
// An iteration costs a function call and a preemption point check, with no
// allocation; a split costs one spawn. So a loop of a million one-nanosecond
// bodies runs at sequential speed on a busy machine and spreads over idle
// workers within a deal interval.
//
// A panic in body stops the iterations of its part of the range and comes
// back as a *PanicError, after the parts already split off have finished;
// when several parts fail, For returns the error of the first in index
// order. When c's context is done (see Ctx.Context), each part stops at
// its next preemption point (within 64 iterations), and For returns the
// context's error once the calls under way have returned; a loop that
// completed before any part saw the context done returns nil, and one
// started with a done context calls nothing.
func For(c *Ctx, lo, hi int, body func(c *Ctx, i int)) error {
	if body == nil {
		return ErrNilFunction
	}
	_, err := part(c, forBody{body: body}, lo, hi)
	return err
}

// forBody is For's loop: body without accumulator.
type forBody struct {
	noAcc
	body func(c *Ctx, i int)
}

func (f forBody) run(c *Ctx, _ struct{}, lo, hi int) (struct{}, int) {
	for {
		f.body(c, lo)
		lo++
		if lo == hi || c.task.Due() {
			return struct{}{}, lo
		}
	}
}

// noAcc is the accumulator of loops that keep none.
type noAcc struct{}

func (noAcc) identity() struct{}                  { return struct{}{} }
func (noAcc) combine(struct{}, struct{}) struct{} { return struct{}{} }

// iterations is what a parallel loop does (For's body, Map's and Reduce's
// function), seen by part, which splits the loop's range on demand. Each
// part of the range folds its iterations into an accumulator of type A,
// from identity(); the parts' accumulators are combined in index order.
type iterations[A any] interface {
	// run does iterations lo, lo+1, ... into acc, at least one, until hi
	// or until a preemption point is due (Task.Due), and returns acc and
	// where it stopped. Stopped before hi, it leaves the caller to pass
	// the point (Task.Wanted).
	run(c *Ctx, acc A, lo, hi int) (A, int)
	identity() A
	// combine gives the accumulator of two adjacent parts, a's first.
	combine(a, b A) A
}

// partial is the outcome of a part run by another thread.
type partial[A any] struct {
	acc A
	err error
}

// part runs [lo, hi) of a loop on c and offers the second half of what
// remains whenever another worker wants work; it returns the range's
// accumulator once the halves it offered have finished, so that no
// iteration outlives the loop.
func part[A any, I iterations[A]](c *Ctx, it I, lo, hi int) (acc A, err error) {
	acc = it.identity()
	if lo >= hi {
		return acc, nil
	}
	if err := c.cancelled(); err != nil {
		return acc, err
	}
	// halves[k] is [mid_k, mid_{k-1}): the last one offered is the next
	// in index order after this thread's own range.
	var halves []*Handle[partial[A]]
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				err = &PanicError{Value: r, Stack: debug.Stack()}
			}
		}
		for k := len(halves) - 1; k >= 0; k-- {
			acc, err = joinPart(c, it, halves[k], acc, err)
		}
	}()
	due := c.task.Due()
	for lo < hi {
		if due {
			if e := c.cancelled(); e != nil {
				returned = true
				return acc, e
			}
			if c.task.Wanted() && hi-lo > 1 {
				mid := lo + (hi-lo+1)/2
				halves = append(halves, offer(c, it, mid, hi))
				hi = mid
			}
		}
		acc, lo = it.run(c, acc, lo, hi)
		due = true
	}
	returned = true
	return acc, nil
}

// offer starts [lo, hi) of a loop as a real thread that another worker can
// take.
func offer[A any, I iterations[A]](c *Ctx, it I, lo, hi int) *Handle[partial[A]] {
	h := &Handle[partial[A]]{}
	h.f = func(c *Ctx) partial[A] {
		acc, err := part(c, it, lo, hi)
		return partial[A]{acc, err}
	}
	h.ctx.task.InitLike(&c.task, (*runner[partial[A]])(h))
	c.inherit(&h.ctx)
	c.task.Offer(&h.ctx.task)
	return h
}

// joinPart waits for h, a part offered by c, whatever c's context says,
// and gives acc combined with h's accumulator; once err is set it only
// waits, keeping the first error.
func joinPart[A any, I iterations[A]](c *Ctx, it I, h *Handle[partial[A]], acc A, err error) (_ A, e error) {
	c.task.Join(&h.ctx.task)
	r, e := h.result()
	switch {
	case err != nil:
		return acc, err
	case e == nil:
		e = r.err
	}
	if e != nil {
		return acc, e
	}
	defer func() {
		if p := recover(); p != nil {
			e = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return it.combine(acc, r.acc), nil
}

// Fork2 calls f(c, x) and f(c, y), the second in parallel where a worker is
// free, and returns both results: the fork-join of a recursive function
// that calls itself twice, with no handle and, in the common case, no
// allocation and no shared write.
//
//	func fib(c *thread.Ctx, n int) int {
//		if n < 2 {
//			return n
//		}
//		a, b := thread.Fork2(c, fib, n-1, n-2)
//		return a + b
//	}
//
// f(c, y) is a lazy fork: it runs on the calling thread, as a plain call
// after f(c, x), unless another worker wanted work meanwhile and took it
// (see docs/design.md, lazy forks). Both calls run at c's priority; pass a
// function, not a closure that captures variables, to keep a fork free of
// allocation. A panic in either call panics the caller, as with plain calls,
// and a panic in the first cancels the second unless it already started.
// The two calls must not wait for each other (a channel between them): the
// second may run only after the first returns.
func Fork2[A, R any](c *Ctx, f func(*Ctx, A) R, x, y A) (R, R) {
	if f == nil {
		panic("thread.Fork2: nil function")
	}
	pool := forkPoolOf[A, R](c)
	level := pool.n
	rec := pool.get(c)
	rec.f, rec.arg = f, y
	c.task.Fork(&rec.ctx.task)
	c.task.Nest(1)
	rx := callFirst(c, f, x, pool, level)
	taken, private := c.task.TakeFork(&rec.ctx.task)
	var ry R
	if taken {
		ry = f(c, y)
		c.task.Nest(-1)
	} else {
		c.task.Nest(-1)
		c.task.Join(&rec.ctx.task)
		if rec.err != nil {
			panic(rec.err.Value) // as a plain call would: not wrapped twice
		}
		ry = rec.res
	}
	pool.release(level, private)
	return rx, ry
}

// callFirst calls f(c, x); if it panics, the lazy fork at pool level
// level is cancelled when no worker took it yet, as a second plain call
// would never have started.
func callFirst[A, R any](c *Ctx, f func(*Ctx, A) R, x A, pool *forkPool[A, R], level int) R {
	returned := false
	defer func() {
		if !returned {
			c.task.Nest(-1)
			_, private := c.task.TakeFork(&pool.recs[level].ctx.task)
			pool.release(level, private)
		}
	}()
	r := f(c, x)
	returned = true
	return r
}

// forkRec is the lazy half of a Fork2. A record that never left its
// goroutine is reused for the next fork; one that was promoted may still be
// referred to by a stale bank entry, and is left to the collector.
type forkRec[A, R any] struct {
	ctx Ctx // the fork's task
	f   func(*Ctx, A) R
	arg A
	res R
	err *PanicError
}

// Run is the engine.Body of a record that another worker took.
func (r *forkRec[A, R]) Run(*engine.Task) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			r.err = &PanicError{Value: p, Stack: debug.Stack()}
		} else if !returned {
			r.err = &PanicError{Value: ErrGoexit}
		}
	}()
	r.res = r.f(&r.ctx, r.arg)
	returned = true
}

// forkPool keeps the records of one goroutine, for one pair of types, one
// for each level of nested Fork2 calls: forks nest, so the record of a
// level is free again when the Fork2 that took it returns. A record that
// was promoted may still be referred to by a stale bank entry; release
// leaves it to the collector, and the level gets a new one.
type forkPool[A, R any] struct {
	recs []*forkRec[A, R]
	n    int // the level of the next fork
}

// forkPoolOf gives the pool of c's goroutine for these types, making it the
// goroutine's cached pool if another was (code that forks at several types
// in turn then allocates records, and stays correct).
func forkPoolOf[A, R any](c *Ctx) *forkPool[A, R] {
	slot := c.task.Local()
	if p, ok := (*slot).(*forkPool[A, R]); ok {
		return p
	}
	p := &forkPool[A, R]{}
	*slot = p
	return p
}

// get takes the record of the next level, prepared as a fork of c.
func (p *forkPool[A, R]) get(c *Ctx) *forkRec[A, R] {
	if p.n == len(p.recs) {
		p.recs = append(p.recs, nil)
	}
	r := p.recs[p.n]
	if r == nil {
		r = &forkRec[A, R]{}
		p.recs[p.n] = r
	}
	p.n++
	r.ctx.task.InitLike(&c.task, r)
	c.inherit(&r.ctx)
	return r
}

// release frees the levels from level up (a panic may have skipped the
// releases of forks nested deeper); the record of level is reused only if
// it never left the goroutine.
func (p *forkPool[A, R]) release(level int, private bool) {
	r := p.recs[level]
	if private {
		// Keep no argument or result of the user's alive; f and the
		// context are overwritten at the next fork of this level.
		var arg A
		var res R
		r.arg, r.res = arg, res
	} else {
		p.recs[level] = nil
	}
	p.n = level
}
