package engine

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// Body is the code of a thread. Package thread implements it for typed
// closures; Run must not panic (thread recovers user panics itself).
type Body interface {
	Run(t *Task)
}

// Task is one thread as the scheduler sees it. Package thread embeds it in
// its typed handles, so a spawn costs one allocation.
//
// Three atomic words carry its life. state holds two bits: stateClaimed is
// set exactly once, by the worker that pops the task from a bank or by a
// thread that joins it before it started (and then runs it inline);
// stateShared is set when the task may sit in a bank or mailbox, where other
// workers can see it, and never cleared. A lazy fork that its owner takes
// out of its slot to run it keeps state 0: taking it is its claim (L1).
//
// end says whether the task finished (endDone) and whether somebody
// registered to wait for it (endWaited), and waiters is the stack of those
// joiners, which becomes closedWaiters when the task finishes after
// somebody registered. end is an integer, not the list itself, so that
// the commonest end, a fork run inline that nobody waits for, is one
// compare-and-swap of an integer (endTaken), which inlines, where one of
// a pointer is a call with a write barrier.
//
// Invariant L9 (PROTOCOLS.md, no joiner is lost): a joiner sets endWaited
// before it pushes itself, and only while endDone is clear; finish sets
// endDone and then closes the stack only if endWaited was set. A joiner
// that pushes before the close is woken; one that comes after finds the
// stack closed (or endDone set) and does not wait. A task whose end word went from 0 to
// endDone directly never had a waiter.
type Task struct {
	body  Body
	rt    *Runtime
	rank  int32
	depth int32
	root  bool // submitted from outside: counted in Runtime.roots
	state atomic.Uint32
	// g is the goroutine that runs the task, set when it starts. The task
	// stays on that goroutine for its whole life, even when it moves between
	// workers: continuations are parked goroutines.
	g       *gor
	end     atomic.Uint32
	waiters atomic.Pointer[waiter]
}

// waiter is a thread (g != nil) or an ordinary goroutine (ch != nil) waiting
// for a task to finish.
//
// A thread may also stop waiting when its context is done. Then two parties
// race to make it runnable, the finishing task and the context's callback;
// woke decides: only the one whose compare-and-swap from waitPending wins
// queues the thread, so it is queued once.
type waiter struct {
	g    *gor
	t    *Task // the waiting thread, for g
	ch   chan struct{}
	woke atomic.Uint32
	next *waiter
}

// The values of waiter.woke.
const (
	waitPending uint32 = iota
	wokeByFinish
	wokeByCancel
)

// closedWaiters closes the stack of waiters of a finished task.
var closedWaiters = &waiter{}

// The bits of Task.end.
const (
	endDone   uint32 = 1
	endWaited uint32 = 2
)

// Init prepares t to run body at priority p on rt. It fails with an error
// wrapping fairness.ErrForeignPriority when rt does not schedule p.
func (t *Task) Init(rt *Runtime, p fairness.Priority, body Body) error {
	r, err := rt.Rank(p)
	if err != nil {
		return err
	}
	t.body, t.rt, t.rank = body, rt, int32(r)
	return nil
}

// InitLike prepares t to run body at the priority of parent, which skips the
// priority lookup of Init: the common case of fork-join code.
func (t *Task) InitLike(parent *Task, body Body) {
	t.body, t.rt, t.rank = body, parent.rt, parent.rank
}

// Reinit prepares t, a task that finished as Recyclable says (or that
// JoinFork ran and nobody else looked at, L1a), to run its body again at
// the priority of parent, as a new thread. Nothing else can read t
// meanwhile, so the words are cleared by plain writes, not atomic ones,
// and only those that hold something: a task that JoinFork ran still has
// state, end and waiters zero (its state stays 0 by L1, and nobody ended
// or waited for it), so that the commonest reuse writes its runtime and
// rank alone (Spawn sets the depth, the run sets g, the body stays).
func (t *Task) Reinit(parent *Task) {
	t.rt, t.rank = parent.rt, parent.rank
	if t.end.Load()|t.state.Load() != 0 || t.waiters.Load() != nil {
		*t = Task{body: t.body, rt: parent.rt, rank: parent.rank}
	}
}

// Recyclable reports whether t, a task that is done, finished without
// other workers ever seeing it: it was taken out of its lazy slot and run
// (its state was never touched), it never went into a bank or mailbox,
// and it was not submitted. Then no part of the engine holds it any more
// (no bank entry, no lazy slot, no waiter), and the code that owns its
// memory may reuse it for another thread (Reinit).
func (t *Task) Recyclable() bool {
	return !t.root && t.state.Load() == 0 && t.Done()
}

// Priority is the priority the task runs at.
func (t *Task) Priority() fairness.Priority { return t.rt.ranks[t.rank] }

// Runtime is the runtime the task belongs to, nil if Init failed.
func (t *Task) Runtime() *Runtime { return t.rt }

// Done reports whether the task has finished.
func (t *Task) Done() bool { return t.end.Load()&endDone != 0 }

// The bits of Task.state.
const (
	stateClaimed uint32 = 1
	stateShared  uint32 = 2
)

// claim takes the right to run t, a task of a bank or mailbox or a
// submitted one; it succeeds once.
func (t *Task) claim() bool {
	for {
		s := t.state.Load()
		if s&stateClaimed != 0 {
			return false
		}
		if t.state.CompareAndSwap(s, s|stateClaimed) {
			return true
		}
	}
}

// claimHere is claim for a joiner that did not find t in a slot of its
// own goroutine: it may claim t only if t was shared or submitted. A lazy
// fork that was never shared is still in its owner's slot or was taken out
// of it by the one party that runs it (L1); the joiner waits for it.
func (t *Task) claimHere() bool {
	return (t.root || t.state.Load()&stateShared != 0) && t.claim()
}

// claimed reports whether t was claimed.
func (t *Task) claimed() bool { return t.state.Load()&stateClaimed != 0 }

// share marks t as visible to other workers before it goes into a bank; it
// fails if t was claimed meanwhile, and then must not be queued.
func (t *Task) share() bool {
	for {
		s := t.state.Load()
		if s&stateClaimed != 0 {
			return false
		}
		if s&stateShared != 0 || t.state.CompareAndSwap(s, s|stateShared) {
			return true
		}
	}
}

// finish marks t done and makes its waiters runnable. Joining threads go
// into the bank of the worker that finished t, which is free right now. A
// joiner's continuation follows t in the DAG, so its fork depth is t's plus
// one (the paper's definition): it is the youngest thread of the bank, runs
// next, and is not dealt away as if it were old, shallow work.
//
// Invariant (Close's quiescence, runtime.go): every thread that ends goes
// through finish (by retire), but for a thread that was not submitted and
// that nobody waits for, which endTaken marks done without entering the
// scheduler (or package thread reuses without marking it, L1a). So a
// submitted thread leaves Runtime.roots exactly once,
// whichever way it ran: by a worker (run), by RunHere, or inline by a
// joiner that claimed it before it started (join).
func (t *Task) finish(w *worker) {
	if t.end.Swap(endDone)&endWaited != 0 {
		wakeWaiters(t, t.waiters.Swap(closedWaiters), w)
	}
	if t.root {
		t.rt.roots.Add(-1)
	}
}

// wakeWaiters makes ws, the waiters of t that just finished, runnable.
func wakeWaiters(t *Task, ws *waiter, w *worker) {
	for ; ws != nil; ws = ws.next {
		if ws.ch != nil {
			close(ws.ch)
			continue
		}
		if !ws.woke.CompareAndSwap(waitPending, wokeByFinish) {
			continue // its context ended the wait; the thread is queued already
		}
		ws.t.depth = max(ws.t.depth, t.depth) + 1
		w.insert(item{t: ws.t, g: ws.g})
	}
}

// addWaiter registers wt unless t already finished; it reports whether wt
// was registered (and so will be woken). See invariant L9.
func (t *Task) addWaiter(wt *waiter) bool {
	for {
		e := t.end.Load()
		if e&endDone != 0 {
			return false
		}
		if e&endWaited != 0 || t.end.CompareAndSwap(e, e|endWaited) {
			break
		}
	}
	for {
		head := t.waiters.Load()
		if head == closedWaiters {
			return false
		}
		wt.next = head
		if t.waiters.CompareAndSwap(head, wt) {
			return true
		}
	}
}

// endAlone marks t done if nobody registered to wait for it, and reports
// whether it did: then t's end needs nothing more.
func (t *Task) endAlone() bool { return t.end.CompareAndSwap(0, endDone) }

// Wait blocks an ordinary goroutine (not a thread) until t has finished.
func (t *Task) Wait() {
	if t.spinDone() {
		return
	}
	wt := &waiter{ch: make(chan struct{})}
	if t.addWaiter(wt) {
		<-wt.ch
	}
}

// WaitContext is Wait that returns ctx.Err() if ctx is done first.
func (t *Task) WaitContext(ctx context.Context) error {
	if t.Done() || ctx.Err() == nil && t.spinDone() { // no look once ctx is done
		return nil
	}
	wt := &waiter{ch: make(chan struct{})}
	if !t.addWaiter(wt) {
		return nil
	}
	select {
	case <-wt.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// spinDone reports whether t finished within policy.WaitSpin, yielding the
// caller's processor between looks.
func (t *Task) spinDone() bool {
	if t.Done() {
		return true
	}
	for start := time.Now(); time.Since(start) < policy.WaitSpin; {
		goruntime.Gosched()
		if t.Done() {
			return true
		}
	}
	return false
}

// Abandon marks a task that will never run (it failed before it was given
// to a worker) as finished, so that waiting on it returns at once.
func (t *Task) Abandon() {
	t.state.Store(stateClaimed)
	t.end.Store(endDone)
}
