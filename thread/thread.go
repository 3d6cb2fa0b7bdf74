package thread

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/engine"
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
// (for instance through testing.T.FailNow) instead of returning. (A thread
// that Run runs on the calling goroutine ends that goroutine instead.)
// AwaitContext returns it when its function, run on a goroutine of its own
// because the thread's context can be cancelled, calls runtime.Goexit.
var ErrGoexit = errors.New("fairly: thread called runtime.Goexit")

// ErrJoinSelf is returned by Join when a thread joins its own handle, which
// could never finish.
var ErrJoinSelf = errors.New("fairly: thread joins itself")

// ErrWaitInThread is returned by Handle.Wait, Run and RunContext called
// from a thread's code, at once: waiting there would hold the worker while
// it waits for other threads. Run and RunContext return it before f runs.
// Use Spawn and Join inside threads, or Wait and Run inside Await.
var ErrWaitInThread = engine.ErrWaitInThread

// ErrNilRuntime is reported by the handle of a thread started with Go or Run
// on a nil runtime.
var ErrNilRuntime = errors.New("fairly: nil runtime")

// ErrInvalidHandle is returned by Join and Wait for a nil handle or a zero
// Handle value, which no thread stands behind: handles come from Spawn and
// Go.
var ErrInvalidHandle = errors.New("fairly: handle of no thread (nil or zero value)")

// ErrNilContext is reported by the handle of a thread started with GoContext
// or RunContext and a nil context; use context.Background() for none.
var ErrNilContext = errors.New("fairly: nil context")

// ErrSpent is returned by Join, Wait and WaitContext for a handle of Spawn
// or Fork that a Join has already returned the result of: the handle is
// spent, and its thread's record serves another thread now (see Handle).
var ErrSpent = errors.New("fairly: handle already joined (spent)")

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
	task engine.Task    // first: see ctxOf
	cx   *threadContext // nil for context.Background()
}

// threadContext is a thread's context, shared by the threads it starts; a
// pointer keeps a handle small (a spawn allocates it). done is ctx.Done(),
// kept so that waits of threads that cannot be cancelled pay nothing.
type threadContext struct {
	ctx  context.Context
	done <-chan struct{}
}

// Priority is the thread's priority.
func (c *Ctx) Priority() fairness.Priority { return c.task.Priority() }

// Runtime is the runtime the thread runs on.
func (c *Ctx) Runtime() *runtime.Runtime { return publicOf(c.task.Runtime()) }

// Context returns the thread's context: the one given to GoContext or
// RunContext, inherited by every thread it spawns, or
// context.Background(). Pass it to calls that take a context (a database
// query, an outgoing request); when it is cancelled, the thread's waits
// (Join, Sleep, AwaitContext) return its error, and long loops should stop
// when c.Context().Err() is not nil.
//
// Ctx does not implement context.Context itself: a Ctx is valid only on its
// thread, while a context may go anywhere and outlive the thread, as with
// http.Request.Context and testing.T.Context.
func (c *Ctx) Context() context.Context {
	if c.cx == nil {
		return context.Background()
	}
	return c.cx.ctx
}

// inherit gives child, a thread that c starts, c's context.
func (c *Ctx) inherit(child *Ctx) { child.cx = c.cx }

// setContext makes ctx the thread's context.
func (c *Ctx) setContext(ctx context.Context) {
	if done := ctx.Done(); done != nil {
		c.cx = &threadContext{ctx: ctx, done: done}
	} else if ctx != context.Background() {
		c.cx = &threadContext{ctx: ctx} // values, no cancellation
	}
}

// done is the context's Done channel, nil if it cannot be cancelled.
func (c *Ctx) done() <-chan struct{} {
	if c.cx == nil {
		return nil
	}
	return c.cx.done
}

// cancelled is the context's error once it is done, nil before and for a
// thread whose context cannot be cancelled.
func (c *Ctx) cancelled() error {
	if c.done() == nil {
		return nil
	}
	return c.cx.ctx.Err()
}

// publicOf is the *runtime.Runtime that wraps e, nil for nil.
func publicOf(e *engine.Runtime) *runtime.Runtime {
	if e == nil {
		return nil
	}
	return e.Public().(*runtime.Runtime)
}

// Handle is a thread with a result of type T, a future.
//
// A handle of Spawn or Fork is spent once a Join has returned its result:
// the thread's record then goes back to the joining goroutine, so that its
// next Spawn allocates nothing, and a later Join, Wait or WaitContext of the
// handle returns ErrSpent, while Done reports true. Join a spawned thread
// once; a Join that gives up when its context is done does not spend the
// handle. Handles of Go and GoContext are never spent.
type Handle[T any] struct {
	r   *record[T]
	gen uint32            // r's generation when the handle was made
	p   fairness.Priority // the thread's priority
}

// record is a thread with a result of type T, what a Handle stands for.
// Spawn reuses the records that Join gave back (pooled ones): a handle
// names the record and its generation, and use tells a handle whose record
// moved on (spent) from a live one.
//
// use holds the generation in its high 32 bits and, in its low 32, how
// many calls on handles of the record are under way (pin). A Join that got
// the result moves the record to the next generation and zero calls, by
// compare-and-swap, only if it is the one call under way (spend): a call
// that pins later sees another generation and stops before touching
// anything else, and a call already under way keeps the record from being
// reused. So a record is reused only when no other call can read or write
// it (the engine's part: Task.Recyclable).
type record[T any] struct {
	ctx Ctx // first: see ctxOf
	f   func(*Ctx) T
	val T
	err error
	// unseen is set for a thread started by Detach, or once the thread
	// panicked: the panic is reported unless a Join or Wait returns it.
	unseen *unseenPanic
	use    atomic.Uint64
	// pooled says the record is Spawn's, which a Join may give back.
	pooled bool
}

// unseenPanic is a panic that no Join or Wait has returned yet. It is kept
// apart from its record, so that the collector can free the record and then
// report the panic (Config.OnPanic).
type unseenPanic struct {
	detached bool // nobody will ever join: report at once
	seen     atomic.Bool
	rt       *engine.Runtime
	p        fairness.Priority
	err      *PanicError
}

func (u *unseenPanic) report() {
	if !u.seen.Load() {
		u.rt.ReportPanic(u.p, u.err.Value, u.err.Stack)
	}
}

// result gives the thread's result to a Join or Wait, marking its panic seen.
func (r *record[T]) result() (T, error) {
	if r.unseen != nil {
		r.unseen.seen.Store(true)
	}
	return r.val, r.err
}

// generation is the record's generation, the gen of its new handles.
func (r *record[T]) generation() uint32 { return uint32(r.use.Load() >> 32) }

// pin marks a call on h under way, so that its record is not reused
// meanwhile; it fails, pinning nothing, if h is spent.
func (h *Handle[T]) pin() bool {
	if u := h.r.use.Add(1); uint32(u>>32) != h.gen {
		h.unpin()
		return false
	}
	return true
}

// unpin ends a call that pin began.
func (h *Handle[T]) unpin() { h.r.use.Add(^uint64(0)) }

// spend ends a Join that got h's result: when the call is the only one
// under way and the record may be reused (Spawn's, its panic, if any,
// not pending, its task never seen by other workers), the record moves to
// the next generation and goes back to c's goroutine for its next Spawn;
// else it is only unpinned.
func (h *Handle[T]) spend(c *Ctx) {
	r := h.r
	if r.pooled && r.unseen == nil && r.ctx.task.Recyclable() &&
		r.use.CompareAndSwap(uint64(h.gen)<<32|1, uint64(h.gen+1)<<32) {
		var zero T
		r.val, r.err = zero, nil // let the result go
		c.task.Recycled().Push(r)
		return
	}
	h.unpin()
}

// runner is a record seen as the engine.Body of its thread, so that the
// record itself shows no method of the engine.
type runner[T any] record[T]

// Run calls the thread's function and keeps the result, turning a panic
// into a PanicError so the worker carries on.
func (b *runner[T]) Run(*engine.Task) {
	r := (*record[T])(b)
	returned := false
	defer func() {
		if returned { // the common case: no call of recover
			return
		}
		if p := recover(); p != nil {
			pe := &PanicError{Value: p, Stack: debug.Stack()}
			r.err = pe
			r.unpanicked(pe)
		} else {
			r.err = ErrGoexit
		}
	}()
	f := r.f
	r.f = nil // let the closure's captures go as soon as possible
	r.val = f(&r.ctx)
	returned = true
}

// unpanicked arranges for pe to be reported if no Join or Wait returns it:
// at once for a detached thread, else when the record is collected.
func (r *record[T]) unpanicked(pe *PanicError) {
	rt := r.ctx.task.Runtime()
	p := r.ctx.task.Priority()
	if u := r.unseen; u != nil && u.detached {
		rt.ReportPanic(p, pe.Value, pe.Stack)
		return
	}
	u := &unseenPanic{rt: rt, p: p, err: pe}
	r.unseen = u
	goruntime.AddCleanup(r, (*unseenPanic).report, u)
}

// Priority is the priority the thread runs at (the zero Priority for a nil
// handle).
func (h *Handle[T]) Priority() fairness.Priority {
	if h == nil {
		return fairness.Priority{}
	}
	return h.p
}

// Done reports whether the thread has finished; a spent handle's has, and
// so has a nil or zero one, whose Wait returns ErrInvalidHandle at once.
func (h *Handle[T]) Done() bool {
	if h.invalid() || !h.pin() {
		return true
	}
	done := h.r.ctx.task.Done()
	h.unpin()
	return done
}

// Wait blocks the calling goroutine until the thread has finished and
// returns its result. It is for ordinary goroutines; threads use Join,
// which does not hold up their worker, and Wait called from a thread's code
// fails at once with ErrWaitInThread.
func (h *Handle[T]) Wait() (T, error) {
	var zero T
	if h.invalid() {
		return zero, ErrInvalidHandle
	}
	if !h.pin() {
		return zero, ErrSpent
	}
	defer h.unpin()
	return h.r.wait()
}

// wait is Wait for the record itself.
func (r *record[T]) wait() (T, error) {
	if !r.ctx.task.Done() && engine.InThread() {
		var zero T
		return zero, ErrWaitInThread
	}
	r.ctx.task.Wait()
	return r.result()
}

// WaitContext is Wait that gives up when ctx is done first, returning
// ctx.Err(); the thread goes on (its own context decides when it stops).
func (h *Handle[T]) WaitContext(ctx context.Context) (T, error) {
	var zero T
	switch {
	case h.invalid():
		return zero, ErrInvalidHandle
	case ctx == nil:
		return zero, ErrNilContext
	case !h.pin():
		return zero, ErrSpent
	}
	defer h.unpin()
	r := h.r
	if !r.ctx.task.Done() && engine.InThread() {
		return zero, ErrWaitInThread
	}
	if err := r.ctx.task.WaitContext(ctx); err != nil {
		return zero, err
	}
	return r.result()
}

// invalid reports a nil or zero handle: no thread, not even a failed one.
func (h *Handle[T]) invalid() bool { return h == nil || h.r == nil }

// handled is a record that is not reused (not pooled) and a handle of it,
// in one allocation.
type handled[T any] struct {
	r record[T] // first: the record is where the allocation starts (AddCleanup)
	h Handle[T]
}

// newRecord makes the record of a thread that runs f at priority p on rt,
// in one allocation with its handle, which it returns.
func newRecord[T any](rt *engine.Runtime, p fairness.Priority, f func(*Ctx) T) (*Handle[T], error) {
	o := &handled[T]{}
	o.r.f = f
	o.h = Handle[T]{r: &o.r, p: p}
	switch {
	case f == nil:
		return &o.h, ErrNilFunction
	case rt == nil:
		return &o.h, ErrNilRuntime
	}
	return &o.h, o.r.ctx.task.Init(rt, p, (*runner[T])(&o.r))
}

// failed gives a handle that is already finished with err.
func failed[T any](h *Handle[T], err error) *Handle[T] {
	h.r.f, h.r.err = nil, err
	h.r.ctx.task.Abandon()
	return h
}

// Spawn starts f as a new thread at priority p, forked by the running
// thread c, and returns its handle. p may be any priority of the runtime;
// an unknown one gives a handle whose Join reports the error.
//
// A Spawn at c's own priority reuses the record of a thread that a Join on
// the same goroutine spent (see Handle): with a handle that stays in the
// function that joins it, a spawn and join allocate nothing but f when it
// captures variables. A spawn still costs several times a Fork2 or Join2
// (docs/design.md, the fork path): use those for a recursive function's
// two calls, For and Map for loops, and Spawn for a thread at another
// priority, a varying number of children, or a handle that outlives the
// function that made it.
func Spawn[T any](c *Ctx, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	// Small enough to inline: the handle stays on the caller's stack
	// unless it escapes there.
	h := spawn(c, p, f)
	return &h
}

// spawn is Spawn's handle. At c's priority, its record is one that a Join
// of c's goroutine gave back, else a new one.
func spawn[T any](c *Ctx, p fairness.Priority, f func(*Ctx) T) Handle[T] {
	if f == nil || p != c.Priority() {
		return spawnNew(c, p, f)
	}
	s := c.task.Recycled()
	r, ok := s.Top().(*record[T])
	if ok {
		s.Pop()
		r.ctx.task.Reinit(&c.task)
	} else {
		r = &record[T]{pooled: true}
		r.ctx.task.InitLike(&c.task, (*runner[T])(r))
	}
	r.f = f
	c.inherit(&r.ctx)
	c.task.Spawn(&r.ctx.task)
	return Handle[T]{r: r, gen: r.generation(), p: p}
}

// spawnNew is spawn of a thread at another priority than c's, or of a nil
// f: its record is a new one, never reused.
func spawnNew[T any](c *Ctx, p fairness.Priority, f func(*Ctx) T) Handle[T] {
	h, err := newRecord(c.task.Runtime(), p, f)
	if err != nil {
		return *failed(h, err)
	}
	c.inherit(&h.r.ctx)
	c.task.Spawn(&h.r.ctx.task)
	return *h
}

// Detach starts f as a new thread at priority p, forked by the running
// thread c, whose end nobody waits for: fire and forget. It is a real thread
// at once (not a lazy fork: nobody will join it). A panic in f goes to the
// runtime's Config.OnPanic (by default a log/slog error with the stack)
// instead of being lost, and so does a bad argument (a nil f, a priority of
// another runtime). The thread has c's context; if it must outlive that
// context's cancellation, let f use context.WithoutCancel(c.Context()).
func Detach(c *Ctx, p fairness.Priority, f func(*Ctx)) {
	var body func(*Ctx) struct{}
	if f != nil {
		body = func(c *Ctx) struct{} {
			f(c)
			return struct{}{}
		}
	}
	h, err := newRecord(c.task.Runtime(), p, body)
	if err != nil {
		c.task.Runtime().ReportPanic(p, err, nil)
		return
	}
	r := h.r
	r.unseen = &unseenPanic{detached: true}
	c.inherit(&r.ctx)
	c.task.Offer(&r.ctx.task)
}

// Join waits inside thread c for h and returns its result. If h has not
// started, c runs it itself. It fails with ErrIncompatiblePriorities when
// h's priority is not ⪰ c's, with a *PanicError when h panicked, and with
// the error of c's context (see Ctx.Context) when that is done before h
// finishes; h then goes on, and may be joined again. A Join that returns
// h's result spends a handle of Spawn or Fork: a later Join of it returns
// ErrSpent (see Handle).
func Join[T any](c *Ctx, h *Handle[T]) (T, error) {
	if h.invalid() || c.done() != nil || h.r.generation() != h.gen || !c.task.JoinFork(&h.r.ctx.task) {
		return joinSlow(c, h)
	}
	// c took h's thread out of its lazy slot and ran it inline (engine's
	// JoinFork): h's generation was current, and only c's goroutine pushes
	// into its slots and reuses records there, so the thread taken was
	// h's, not yet run, and no other call can have spent h (a spend needs
	// the thread done). Then one compare-and-swap of the record's use
	// word, from h's generation with no call under way to the next, both
	// ends the thread and spends h when nobody else looked: no handle call
	// was under way (so nobody waits for it), and none can start on h any
	// more. Else the thread ends as any other, after c read its result,
	// and h is not spent (as a Join that found other calls under way
	// leaves it). No pin: the parent's Join costs the take and this swap,
	// and calls only the engine (JoinFork, and take there).
	r := h.r
	if r.pooled && r.unseen == nil && r.use.CompareAndSwap(uint64(h.gen)<<32, uint64(h.gen+1)<<32) {
		v, err := r.val, r.err
		var zero T
		r.val, r.err = zero, nil // let the result go
		c.task.Recycled().Push(r)
		return v, err
	}
	v, err := r.result()
	c.task.EndTaken(&r.ctx.task) // after reading the result: a joiner woken may spend the record
	return v, err
}

// joinSlow is Join but for its fast path.
func joinSlow[T any](c *Ctx, h *Handle[T]) (T, error) {
	var zero T
	if h.invalid() {
		return zero, ErrInvalidHandle
	}
	r := h.r
	if !h.pin() {
		return zero, ErrSpent
	}
	// One function from the pin to the spend: a call fewer on the path of
	// every fork-join.
	switch r.ctx.task.Runtime() {
	case nil: // failed before it could start
		h.unpin()
		return r.result()
	case c.task.Runtime():
	default:
		h.unpin()
		return zero, ErrForeignHandle
	}
	if &r.ctx == c {
		h.unpin()
		return zero, ErrJoinSelf
	}
	if hp, cp := h.p, c.Priority(); hp != cp && !cp.Order().LessEq(cp, hp) {
		h.unpin()
		return zero, fmt.Errorf("%w: %v joining %v", ErrIncompatiblePriorities, cp, hp)
	}
	if !r.ctx.task.Done() {
		if c.done() == nil {
			c.task.Join(&r.ctx.task)
		} else if err := c.task.JoinContext(c.cx.ctx, &r.ctx.task); err != nil {
			h.unpin()
			return zero, err
		}
	}
	v, err := r.result()
	h.spend(c) // after reading the result: a spent record may be cleared
	return v, err
}

// Go starts f as a new thread at priority p from an ordinary goroutine.
// The handle reports runtime.ErrClosed, or an unknown priority, from Wait.
func Go[T any](rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	return start(nil, rt, p, f)
}

// GoContext is Go for a thread whose context is ctx (see Ctx.Context): its
// waits end, and its code can see, when ctx is cancelled. A nil ctx gives a
// handle that reports ErrNilContext.
func GoContext[T any](ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	if ctx == nil {
		h, _ := newRecord[T](nil, p, nil)
		return failed(h, ErrNilContext)
	}
	return start(ctx, rt, p, f)
}

// start submits f as a thread with context ctx (nil for none).
func start[T any](ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) *Handle[T] {
	h, err := prepare(ctx, rt, p, f)
	if err == nil {
		err = h.r.ctx.task.Runtime().Submit(&h.r.ctx.task)
	}
	if err != nil {
		return failed(h, err)
	}
	return h
}

// prepare makes the handle of a thread from outside the runtime, with
// context ctx (nil for none).
func prepare[T any](ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (*Handle[T], error) {
	h, err := newRecord(engine.Of(rt), p, f)
	if err == nil && ctx != nil {
		h.r.ctx.setContext(ctx)
	}
	return h, err
}

// Run starts f as a thread at priority p and waits for its result; it is Go
// followed by Wait. When a worker is idle, or runs a lower priority that
// it would leave for p at its next preemption point, the calling goroutine
// takes its place and runs the thread itself, which saves two wake-ups of
// operating system threads (docs/results.md, "Starting and resuming threads"). Such a thread
// behaves as any other, except that runtime.Goexit in it ends the calling
// goroutine, as a direct call would, where elsewhere Run returns ErrGoexit.
//
// Run is for ordinary goroutines and for functions that Await runs. Called
// from a thread's code it fails with ErrWaitInThread before anything runs
// (f does not run): waiting there would hold the thread's worker. A thread
// starts a thread with Spawn and waits for it with Join, whose priority
// rule then applies.
func Run[T any](rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (T, error) {
	return run(nil, rt, p, f)
}

// RunContext is Run for a thread whose context is ctx (see Ctx.Context):
// when ctx is done, the thread's waits (Join, Sleep, AwaitContext) return
// its error and its code can see it, so that it stops soon. RunContext
// still returns only once the thread has returned, as errgroup's Wait does,
// so that nothing of the call outlives it (an HTTP handler may pass its
// ResponseWriter); use GoContext and Handle.WaitContext to stop waiting
// earlier. A nil ctx gives ErrNilContext. Like Run, it fails with
// ErrWaitInThread, before f runs, when called from a thread's code.
func RunContext[T any](ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (T, error) {
	if ctx == nil {
		var zero T
		return zero, ErrNilContext
	}
	return run(ctx, rt, p, f)
}

// run is Run with context ctx (nil for none): on the calling goroutine if
// a worker sleeps or would switch to p at its next point, else through
// Submit and a wait.
func run[T any](ctx context.Context, rt *runtime.Runtime, p fairness.Priority, f func(*Ctx) T) (T, error) {
	var zero T
	h, err := prepare(ctx, rt, p, f)
	if err != nil {
		return zero, err
	}
	labels := context.Background()
	if ctx != nil {
		labels = ctx
	}
	r := h.r
	ran, err := r.ctx.task.Runtime().RunHere(&r.ctx.task, labels)
	if err == nil && !ran {
		err = r.ctx.task.Runtime().Submit(&r.ctx.task)
	}
	switch {
	case err != nil:
		r.ctx.task.Abandon()
		return zero, err
	case !ran:
		return r.wait()
	}
	return r.result()
}

// Yield is a preemption point: the thread's worker may switch to a more
// urgent thread here. Call it in long loops that make no other thread call.
func Yield(c *Ctx) { c.task.Yield() }

// Await runs the blocking call f (a read, a syscall, a channel receive)
// without holding a processor: the worker runs other threads meanwhile, and
// the thread continues, promptly, once f returns. A panic in f panics the
// thread; so does a nil f, with ErrNilFunction, before the thread gives up
// its processor.
func Await[T any](c *Ctx, f func() T) T {
	if f == nil {
		panic(ErrNilFunction)
	}
	var v T
	c.task.Suspend(func() { v = f() })
	return v
}

// AwaitContext is Await for a call that takes the thread's context: f gets
// c.Context(), and AwaitContext returns that context's error as soon as it
// is done, without waiting for f, which should then return soon (its
// result is dropped; a panic in it after that goes to Config.OnPanic).
// Since it returns an error, a panic in f before that comes back as a
// *PanicError, as from Join, and the thread goes on; a nil f gives
// ErrNilFunction.
func AwaitContext[T any](c *Ctx, f func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if f == nil {
		return zero, ErrNilFunction
	}
	if err := c.cancelled(); err != nil {
		return zero, err
	}
	ctx := c.Context()
	done := c.done()
	var r awaited[T]
	if done == nil {
		c.task.Suspend(func() { callAwaited(ctx, f, &r) })
	} else {
		ch := make(chan awaited[T], 1)
		c.task.Suspend(func() {
			go func() {
				var res awaited[T]
				// The send is deferred: it happens also when f calls
				// runtime.Goexit. Close, called in f, refuses with
				// ErrInThread (engine.Awaited).
				defer func() { ch <- res }()
				engine.Awaited(func() { callAwaited(ctx, f, &res) })
			}()
			select {
			case r = <-ch:
			case <-done:
				r.err = ctx.Err()
				go reportLate(c.task.Runtime(), c.Priority(), ch)
			}
		})
	}
	if r.panic != nil {
		return zero, r.panic
	}
	return r.v, r.err
}

type awaited[T any] struct {
	v     T
	err   error
	panic *PanicError
}

// callAwaited calls f and puts its outcome in res, a panic as a
// PanicError. A runtime.Goexit in f still ends the calling goroutine, with
// ErrGoexit in res: on the thread's own goroutine the thread ends with
// ErrGoexit, as from a direct call; on a goroutine of AwaitContext's, that
// goroutine sends res before it ends, so that the thread does not wait
// forever and AwaitContext returns ErrGoexit.
func callAwaited[T any](ctx context.Context, f func(context.Context) (T, error), res *awaited[T]) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			*res = awaited[T]{panic: &PanicError{Value: p, Stack: debug.Stack()}}
		} else if !returned {
			*res = awaited[T]{err: ErrGoexit}
		}
	}()
	res.v, res.err = f(ctx)
	returned = true
}

// reportLate waits for the outcome of a call that AwaitContext gave up on
// and reports its panic, if any, so that it is not lost.
func reportLate[T any](rt *engine.Runtime, p fairness.Priority, ch <-chan awaited[T]) {
	if pe := (<-ch).panic; pe != nil {
		rt.ReportPanic(p, pe.Value, pe.Stack)
	}
}

// Sleep pauses the thread for at least d without holding a processor. It
// returns early, with the context's error, when the thread's context is
// done first (see Ctx.Context); else nil.
func Sleep(c *Ctx, d time.Duration) error {
	done := c.done()
	if done == nil {
		c.task.Sleep(d)
		return nil
	}
	if err := c.cx.ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		c.task.Yield()
		return nil
	}
	var err error
	c.task.Suspend(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
			err = c.cx.ctx.Err()
		}
	})
	return err
}
