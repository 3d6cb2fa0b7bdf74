package thread

import "runtime/debug"

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
		if hi-i > 1 && c.task.Wanted() {
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
	h.ctx.task.InitLike(&c.task, h)
	c.task.Offer(&h.ctx.task)
	return h
}
