package thread

import (
	"runtime/debug"
	"unsafe"

	"github.com/fairlyprompt/fairly/internal/engine"
)

// For calls body(c, i) for every i in [lo, hi), in parallel where workers
// are free, at c's priority, and returns when every call has returned.
//
// There is no grain to choose: For runs the iterations in order, on the
// calling thread, and splits off the second half of what remains only when
// another worker wants work and none is queued (lazy binary splitting).
// An iteration costs a function call and a poll of the worker's attention
// word, with no allocation; a split costs one spawn. So a loop of a million one-nanosecond
// bodies runs at sequential speed on a busy machine and spreads over idle
// workers within a deal interval.
//
// A panic in body stops the iterations of its part of the range and comes
// back as a *PanicError, after the parts already split off have finished;
// when several parts fail, For returns the error of the first in index
// order. When c's context is done (see Ctx.Context), each part stops at
// its next preemption point, which the runtime raises at least once an
// interrupt (Config.Interrupt, 1 ms by default), and For returns the
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
		if lo == hi || c.task.Attention() {
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
	var halves []*record[partial[A]]
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
func offer[A any, I iterations[A]](c *Ctx, it I, lo, hi int) *record[partial[A]] {
	r := &record[partial[A]]{}
	r.f = func(c *Ctx) partial[A] {
		acc, err := part(c, it, lo, hi)
		return partial[A]{acc, err}
	}
	r.ctx.task.InitLike(&c.task, (*runner[partial[A]])(r))
	c.inherit(&r.ctx)
	c.task.Offer(&r.ctx.task)
	return r
}

// joinPart waits for h, a part offered by c, whatever c's context says,
// and gives acc combined with h's accumulator; once err is set it only
// waits, keeping the first error.
func joinPart[A any, I iterations[A]](c *Ctx, it I, h *record[partial[A]], acc A, err error) (_ A, e error) {
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
// that calls itself twice, with no handle, no allocation and no shared
// write in the common case: a fork nobody takes costs about one call more
// than the two plain calls (docs/design.md, the fork path).
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
// and a panic in the first cancels the second unless another worker took it
// already (if the thread recovers that panic, the second call may still be
// taken until the Fork2 around the recovering code returns; its result is
// then dropped). The two calls must not wait for each other (a channel
// between them): the second may run only after the first returns. A nil f
// panics as a call of it would.
func Fork2[A, R any](c *Ctx, f func(*Ctx, A) R, x, y A) (R, R) {
	s, level, free := c.nextFork()
	r, ok := free.(*forkRec[A, R])
	if ok {
		r.f, r.arg = f, y
		pushFork(s)
	} else {
		r = fork(c, f, y)
	}
	rx := f(c, x)
	if popFork(s, level) {
		return rx, f(c, y)
	}
	return rx, join(c, r, level)
}

// Join2 calls f(c) and g(c), the second in parallel where a worker is free,
// and returns both results: Fork2 for two different functions, with the
// same rules (g(c) is the lazy fork). It allocates nothing but g's
// closure when g captures variables: f is only called.
func Join2[A, B any](c *Ctx, f func(*Ctx) A, g func(*Ctx) B) (A, B) {
	s, level, r := push[func(*Ctx) B, B](c, nil, g)
	a := f(c)
	if popFork(s, level) {
		return a, g(c)
	}
	return a, join(c, r, level)
}

// push is Fork2's push for Join2: it forks f(c, y) at the next level (y(c)
// for a nil f, see forkRec.call) and gives the stack, the level and the
// record.
func push[A, R any](c *Ctx, f func(*Ctx, A) R, y A) (*engine.Forks, int, *forkRec[A, R]) {
	s, level, free := c.nextFork()
	r, ok := free.(*forkRec[A, R])
	if !ok {
		return s, level, fork(c, f, y)
	}
	r.f, r.arg = f, y
	pushFork(s)
	return s, level, r
}

// nextFork, pushFork and popFork are Fork2's fast path in the engine. They
// are not generic so that the engine's methods inline into the instances
// of Fork2 that other packages compile: the compiler has the body of a
// function of an indirectly imported package only if a non-generic
// function of this package inlines it (compare golang/go#56280).
//
// nextFork gives c's stack of private forks, the level of the next fork,
// and the record free at that level if no preemption point is due.
func (c *Ctx) nextFork() (*engine.Forks, int, engine.Lazy) { return c.task.NextFork() }

// pushFork pushes the record free at the next level, once written.
func pushFork(s *engine.Forks) { s.Push() }

// popFork takes back the fork of level if it is still there.
func popFork(s *engine.Forks, level int) bool { return s.Pop(level) }

// fork is the slow path of a fork: the level has no record of these types
// yet, or a preemption point is due.
func fork[A, R any](c *Ctx, f func(*Ctx, A) R, y A) *forkRec[A, R] {
	s := c.task.Forks()
	r, ok := s.Free().(*forkRec[A, R])
	if !ok {
		r = &forkRec[A, R]{}
		s.Install(r)
	}
	r.f, r.arg = f, y
	s.Push()
	s.Point(&c.task)
	return r
}

// join is the slow path of taking fork r of level back: r was promoted and
// runs elsewhere. (Take settles the stack; it reports the fork still there
// only to callers that did not try Pop first.)
func join[A, R any](c *Ctx, r *forkRec[A, R], level int) R {
	if c.task.Forks().Take(level) {
		return r.call(c)
	}
	c.task.Join(&r.ctx.task)
	if r.err != nil {
		panic(r.err.Value) // as a plain call would: not wrapped twice
	}
	return r.res
}

// forkRec is the lazy half of a Fork2 or Join2, the record of one level of
// a goroutine's engine.Forks. The fast path writes only f and arg (Join2:
// nil and its second function); the
// task and the context are prepared when the fork is promoted, and a
// promoted record leaves the stack with its task, for the collector.
type forkRec[A, R any] struct {
	ctx Ctx // the fork's task, once promoted
	f   func(*Ctx, A) R
	arg A
	res R
	err *PanicError
}

// Promote prepares the record's task as a fork of parent.
func (r *forkRec[A, R]) Promote(parent *engine.Task) *engine.Task {
	r.ctx.task.InitLike(parent, r)
	ctxOf(parent).inherit(&r.ctx)
	return &r.ctx.task
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
	r.res = r.call(&r.ctx)
	returned = true
}

// call calls the fork: f(c, arg), or for Join2's records, whose f is nil,
// arg(c). (Join2 cannot store a function that calls arg: in a generic
// function, a function value of a generic function carries a dictionary,
// which is allocated.)
func (r *forkRec[A, R]) call(c *Ctx) R {
	if r.f == nil {
		return any(r.arg).(func(*Ctx) R)(c)
	}
	return r.f(c, r.arg)
}

// ctxOf is the Ctx of t, a thread that runs code of this package. Every
// task that package thread gives the engine is the task field of a Ctx (a
// handle's, a fork record's), at offset 0, so the conversion is exact; the
// engine hands such a task back when it promotes a fork (the thread that
// made it), which saves the fast path of a fork from storing the parent's
// context into every record.
func ctxOf(t *engine.Task) *Ctx { return (*Ctx)(unsafe.Pointer(t)) }

// The conversion in ctxOf needs the task at offset 0 of Ctx.
var _ [0]struct{} = [unsafe.Offsetof(Ctx{}.task)]struct{}{}
