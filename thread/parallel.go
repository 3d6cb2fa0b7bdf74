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
// the first such error is returned.
func For(c *Ctx, lo, hi int, body func(c *Ctx, i int)) error {
	if body == nil {
		return ErrNilFunction
	}
	return forRange(c, lo, hi, body)
}

// forRange runs body over [lo, hi), offering halves of the rest on demand.
func forRange(c *Ctx, lo, hi int, body func(*Ctx, int)) (err error) {
	var halves []*Handle[error]
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				err = &PanicError{Value: r, Stack: debug.Stack()}
			}
		}
		for _, h := range halves {
			v, e := Join(c, h)
			if e == nil {
				e = v
			}
			if e != nil && err == nil {
				err = e
			}
		}
	}()
	for i := lo; i < hi; i++ {
		if c.task.Due() && c.task.Wanted() && hi-i > 1 {
			mid := i + (hi-i+1)/2
			halves = append(halves, offer(c, mid, hi, body))
			hi = mid
		}
		body(c, i)
	}
	returned = true
	return nil
}

// offer starts [lo, hi) as a real thread that another worker can take.
func offer(c *Ctx, lo, hi int, body func(*Ctx, int)) *Handle[error] {
	h := &Handle[error]{}
	h.f = func(c *Ctx) error { return forRange(c, lo, hi, body) }
	h.ctx.task.InitLike(&c.task, (*runner[error])(h))
	c.inherit(&h.ctx)
	c.task.Offer(&h.ctx.task)
	return h
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
