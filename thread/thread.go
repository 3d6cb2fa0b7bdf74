// Package thread is fairly's user API: prioritised threads with typed
// results, on top of package runtime.
//
// A thread is a closure run by a worker of the runtime at a priority. Inside
// a thread, Spawn forks a child and Join waits for it; from an ordinary
// goroutine, Go and Run start a thread and Handle.Wait waits for it. Spawn,
// Join, Yield, Await and Sleep are preemption points: a thread that computes
// for long without any of them should call Yield now and then, so that its
// worker can switch priorities on time.
package thread

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
)

// ErrIncompatiblePriorities is returned by Join when the joined thread's
// priority is not at least the caller's: waiting for it would let a
// lower-priority computation hold up a higher-priority one.
var ErrIncompatiblePriorities = errors.New("fairly: join would invert priorities")

// ErrForeignHandle is returned by Join for a handle of another runtime.
var ErrForeignHandle = errors.New("fairly: handle belongs to another runtime")

// ErrNilFunction is reported by the handle of a thread started with a nil function.
var ErrNilFunction = errors.New("fairly: nil thread function")

// ErrGoexit is reported by the handle of a thread that called runtime.Goexit
// (for instance through testing.T.FailNow) instead of returning.
var ErrGoexit = errors.New("fairly: thread called runtime.Goexit")

// ErrJoinSelf is returned by Join when a thread joins its own handle, which
// could never finish.
var ErrJoinSelf = errors.New("fairly: thread joins itself")

// ErrWaitInThread is returned by Handle.Wait (and so Run) called from a
// thread's code: waiting there would hold the worker while it waits for
// other threads. Use Join inside threads, or Wait inside Await.
var ErrWaitInThread = errors.New("fairly: Handle.Wait inside a thread; use thread.Join")

// ErrNilRuntime is reported by the handle of a thread started with Go or Run
// on a nil runtime.
var ErrNilRuntime = errors.New("fairly: nil runtime")

// ErrInvalidHandle is returned by Join and Wait for a nil handle or a zero
// Handle value, which no thread stands behind: handles come from Spawn and
// Go.
var ErrInvalidHandle = errors.New("fairly: handle of no thread (nil or zero value)")

// PanicError is the error a thread's panic turns into. Join and Wait return
// it (errors.As gets at the value and the stack).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("fairly: thread panicked: %v", e.Value) }

// Unwrap gives the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Ctx is what a running thread knows about itself. It is valid only inside
// the thread it was given to and must not be shared with other threads.
type Ctx struct {
	task runtime.Task
}

// Priority is the thread's priority.
func (c *Ctx) Priority() fairness.Priority { return c.task.Priority() }

// Runtime is the runtime the thread runs on.
func (c *Ctx) Runtime() *runtime.Runtime { return c.task.Runtime() }

// Handle is a thread with a result of type T, a future.
type Handle[T any] struct {
	ctx Ctx // the thread's own context; it holds the runtime's task
	f   func(*Ctx) T
	val T
	err error
	// unseen is set for a thread started by Detach, or once the thread
	// panicked: the panic is reported unless a Join or Wait returns it.
	unseen *unseenPanic
}

// unseenPanic is a panic that no Join or Wait has returned yet. It is kept
// apart from its handle, so that the collector can free the handle and then
// report the panic (Config.OnPanic).
type unseenPanic struct {
	detached bool // nobody will ever join: report at once
	seen     atomic.Bool
	rt       *runtime.Runtime
	p        fairness.Priority
	err      *PanicError
}

func (u *unseenPanic) report() {
	if !u.seen.Load() {
		u.rt.ReportPanic(u.p, u.err.Value, u.err.Stack)
	}
}

// result gives the thread's result to a Join or Wait, marking its panic seen.
func (h *Handle[T]) result() (T, error) {
	if h.unseen != nil {
		h.unseen.seen.Store(true)
	}
	return h.val, h.err
}

// Run is the runtime.Body of the thread: it calls f and keeps the result,
// turning a panic into a PanicError so the worker carries on.
func (h *Handle[T]) Run(*runtime.Task) {
	returned := false
	defer func() {
		if r := recover(); r != nil {
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			h.err = pe
			h.unpanicked(pe)
		} else if !returned {
			h.err = ErrGoexit
		}
	}()
	f := h.f
	h.f = nil // let the closure's captures go as soon as possible
	h.val = f(&h.ctx)
	returned = true
}

// unpanicked arranges for pe to be reported if no Join or Wait returns it:
// at once for a detached thread, else when the handle is collected.
func (h *Handle[T]) unpanicked(pe *PanicError) {
	rt := h.ctx.task.Runtime()
	if u := h.unseen; u != nil && u.detached {
		rt.ReportPanic(h.Priority(), pe.Value, pe.Stack)
		return
	}
	u := &unseenPanic{rt: rt, p: h.Priority(), err: pe}
	h.unseen = u
	goruntime.AddCleanup(h, (*unseenPanic).report, u)
}

// Priority is the priority the thread runs at.
func (h *Handle[T]) Priority() fairness.Priority { return h.ctx.task.Priority() }

// Done reports whether the thread has finished.
func (h *Handle[T]) Done() bool { return h.ctx.task.Done() }

// Wait blocks the calling goroutine until the thread has finished and
// returns its result. It is for ordinary goroutines; threads use Join,
// which does not hold up their worker, and Wait called from a thread's code
// fails at once with ErrWaitInThread.
func (h *Handle[T]) Wait() (T, error) {
	var zero T
	if h.invalid() {
		return zero, ErrInvalidHandle
	}
	if !h.ctx.task.Done() && runtime.InThread() {
		return zero, ErrWaitInThread
	}
	h.ctx.task.Wait()
	return h.result()
}

// invalid reports a nil or zero handle: no thread, not even a failed one.
func (h *Handle[T]) invalid() bool {
	return h == nil || h.ctx.task.Runtime() == nil && h.err == nil
}

func newHandle[T any](rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (*Handle[T], error) {
	h := &Handle[T]{f: f}
	switch {
	case f == nil:
		return h, ErrNilFunction
	case rt == nil:
		return h, ErrNilRuntime
	}
	return h, h.ctx.task.Init(rt, p, h)
}

// failed gives a handle that is already finished with err.
func failed[T any](h *Handle[T], err error) *Handle[T] {
	h.f, h.err = nil, err
	h.ctx.task.Abandon()
	return h
}

// Spawn starts f as a new thread at priority p, forked by the running
// thread c, and returns its handle. p may be any priority of the runtime;
// an unknown one gives a handle whose Join reports the error.
func Spawn[T any](c *Ctx, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	if f != nil && p == c.Priority() {
		h := &Handle[T]{f: f}
		h.ctx.task.InitLike(&c.task, h)
		c.task.Spawn(&h.ctx.task)
		return h
	}
	h, err := newHandle(c.task.Runtime(), p, f)
	if err != nil {
		return failed(h, err)
	}
	c.task.Spawn(&h.ctx.task)
	return h
}

// Detach starts f as a new thread at priority p, forked by the running
// thread c, whose end nobody waits for: fire and forget. It is a real thread
// at once (not a lazy fork: nobody will join it). A panic in f goes to the
// runtime's Config.OnPanic (by default a log/slog error with the stack)
// instead of being lost, and so does a bad argument (a nil f, a priority of
// another runtime).
func Detach(c *Ctx, p fairness.Priority, f func(*Ctx)) {
	var body func(*Ctx) struct{}
	if f != nil {
		body = func(c *Ctx) struct{} {
			f(c)
			return struct{}{}
		}
	}
	h, err := newHandle(c.task.Runtime(), p, body)
	if err != nil {
		c.task.Runtime().ReportPanic(p, err, nil)
		return
	}
	h.unseen = &unseenPanic{detached: true}
	c.task.Offer(&h.ctx.task)
}

// Join waits inside thread c for h and returns its result. If h has not
// started, c runs it itself. It fails with ErrIncompatiblePriorities when
// h's priority is not ⪰ c's, and with a *PanicError when h panicked.
func Join[T any](c *Ctx, h *Handle[T]) (T, error) {
	var zero T
	if h.invalid() {
		return zero, ErrInvalidHandle
	}
	switch h.ctx.task.Runtime() {
	case nil: // failed before it could start
		return h.result()
	case c.task.Runtime():
	default:
		return zero, ErrForeignHandle
	}
	if &h.ctx == c {
		return zero, ErrJoinSelf
	}
	if hp, cp := h.Priority(), c.Priority(); hp != cp && !cp.Order().LessEq(cp, hp) {
		return zero, fmt.Errorf("%w: %v joining %v", ErrIncompatiblePriorities, cp, hp)
	}
	if !h.Done() {
		c.task.Join(&h.ctx.task)
	}
	return h.result()
}

// Go starts f as a new thread at priority p from an ordinary goroutine.
// The handle reports runtime.ErrClosed, or an unknown priority, from Wait.
func Go[T any](rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	h, err := newHandle(rt, p, f)
	if err == nil {
		err = rt.Submit(&h.ctx.task)
	}
	if err != nil {
		return failed(h, err)
	}
	return h
}

// Run starts f as a thread at priority p and waits for its result; it is Go
// followed by Wait.
func Run[T any](rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (T, error) {
	return Go(rt, p, f).Wait()
}

// Yield is a preemption point: the thread's worker may switch to a more
// urgent thread here. Call it in long loops that make no other thread call.
func Yield(c *Ctx) { c.task.Yield() }

// Await runs the blocking call f (a read, a syscall, a channel receive)
// without holding a processor: the worker runs other threads meanwhile, and
// the thread continues, promptly, once f returns. A panic in f panics the
// thread.
func Await[T any](c *Ctx, f func() T) T {
	var v T
	c.task.Suspend(func() { v = f() })
	return v
}

// Sleep pauses the thread for at least d without holding a processor.
func Sleep(c *Ctx, d time.Duration) { c.task.Sleep(d) }
