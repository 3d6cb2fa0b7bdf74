package thread

import (
	"context"
	"runtime/debug"
	"sync"
)

// Group is a set of threads working on parts of one task, as
// golang.org/x/sync/errgroup's Group is for goroutines: Go starts each
// part as a thread at the caller's priority, and Wait waits for them all
// and returns the first error. The first part to fail, by returning an
// error or by panicking, cancels the context of the others (see
// Ctx.Context), so that their waits end and their loops can stop; the
// cause of the cancellation (context.Cause) is that error.
//
// The zero value is ready to use. The group's context is derived from the
// context of the thread that calls Go first, when it does. Go may be called
// by the thread that will Wait and by the group's own threads, at any time
// before Wait returns; Wait is called once, by a thread whose priority is
// at most the parts' (the thread that started them, usually). After Wait
// the group's context is cancelled, as errgroup's is. A Group must not be
// copied after first use.
//
// Go, like Fork, allocates a handle and a closure; there is no limit on the
// number of parts, since a part that no worker takes runs inline in Wait.
// For loops and slices, For and Map cost less.
type Group struct {
	mu     sync.Mutex
	cx     *threadContext // the parts' context, set by the first Go
	cancel context.CancelCauseFunc
	parts  []*Handle[struct{}] // started and not yet waited for
	err    error               // the first failure
}

// Go starts f as a thread of the group, at the priority of the running
// thread c and forked by it (a lazy fork, see Spawn), with the group's
// context. f's error, a panic in f (as a *PanicError) or a nil f
// (ErrNilFunction) fails the group if it is the first failure.
func (g *Group) Go(c *Ctx, f func(c *Ctx) error) {
	g.mu.Lock()
	if g.cx == nil {
		ctx, cancel := context.WithCancelCause(c.Context())
		g.cx, g.cancel = &threadContext{ctx: ctx, done: ctx.Done()}, cancel
	}
	cx := g.cx
	g.mu.Unlock()
	if f == nil {
		g.fail(c, ErrNilFunction)
		return
	}
	h := Fork(c, func(c *Ctx) struct{} {
		c.cx = cx // the thread's own Ctx: nobody else reads it once it runs
		g.call(c, f)
		return struct{}{}
	})
	g.mu.Lock()
	g.parts = append(g.parts, h)
	g.mu.Unlock()
}

// call runs f for the thread c of the group and records how it ended.
func (g *Group) call(c *Ctx, f func(c *Ctx) error) {
	returned := false
	defer func() {
		if r := recover(); r != nil {
			g.fail(c, &PanicError{Value: r, Stack: debug.Stack()})
		} else if !returned {
			g.fail(c, ErrGoexit)
		}
	}()
	err := f(c)
	returned = true
	if err != nil {
		g.fail(c, err)
	}
}

// fail records err as the group's failure if it is the first, and cancels
// the group's context. A later panic, which Wait will not return, goes to
// the runtime's Config.OnPanic so that it is not lost.
func (g *Group) fail(c *Ctx, err error) {
	g.mu.Lock()
	first := g.err == nil
	if first {
		g.err = err
	}
	cancel := g.cancel
	g.mu.Unlock()
	if first && cancel != nil {
		cancel(err)
		return
	}
	if pe, ok := err.(*PanicError); ok && !first {
		c.task.Runtime().ReportPanic(c.Priority(), pe.Value, pe.Stack)
	}
}

// Wait waits inside thread c until every thread of the group has returned,
// including those that they started, and returns the group's first failure
// or nil. It waits for them even when c's own context is done first: they
// have the group's context, derived from it, and see it done too. Wait
// also fails, when no part did, with Join's errors for a thread that c may
// not wait for (ErrIncompatiblePriorities, ErrForeignHandle, ErrJoinSelf).
func (g *Group) Wait(c *Ctx) error {
	for {
		g.mu.Lock()
		parts := g.parts
		g.parts = nil
		g.mu.Unlock()
		if len(parts) == 0 {
			break
		}
		// The last fork is on top of c's stack: join in reverse order, as
		// nested Spawn and Join calls would.
		for i := len(parts) - 1; i >= 0; i-- {
			g.join(c, parts[i])
		}
	}
	g.mu.Lock()
	err, cancel := g.err, g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
	return err
}

// join waits for the thread h of the group. Join gives up when c's context
// is done; the thread then goes on, and Wait waits for it all the same.
func (g *Group) join(c *Ctx, h *Handle[struct{}]) {
	_, err := Join(c, h)
	if err != nil && err == c.cancelled() && !h.Done() {
		c.task.Join(&h.r.ctx.task)
		_, err = Join(c, h) // done now: the result, whatever the context
	}
	if err != nil {
		g.fail(c, err)
	}
}
