// Package thread is fairly's user API: prioritised threads with typed
// results, run by a runtime.Runtime.
//
// A thread is a closure run by a worker of the runtime at a priority. Inside
// a thread, Spawn forks a child (Fork at the thread's own priority) and
// Join waits for it; Fork2, For, Map, Reduce, MapReduce and Group cover the
// common shapes of fork-join code. From an ordinary goroutine, Go and Run
// start a thread and Handle.Wait waits for it. Spawn, Join, Yield, Await
// and Sleep are preemption points: a thread that computes for long without
// any of them should call Yield now and then, so that its worker can switch
// priorities on time.
//
// # Panics and bad arguments
//
// One rule decides what a panic in your code, or a nil function, does: a
// function that returns an error reports them through it, and a function
// that returns only values behaves like a plain call.
//
//   - Join, Handle.Wait and WaitContext, Run and RunContext, For, Map,
//     Reduce, MapReduce, Group.Wait and AwaitContext return an error: a
//     panic comes back as a *PanicError (errors.As gets the value and the
//     stack) and a nil function as ErrNilFunction (for Spawn, Fork, Go and
//     Group.Go, from the wait for that thread). The thread (or
//     AwaitContext's call) that panicked ends; the runtime and the caller go
//     on.
//   - Fork2, Join2 and Await return only their functions' results: a panic
//     goes on up the caller's stack, as it would from f(x) (and as rayon's
//     join does), and a nil function panics.
//   - A panic that no call will return, in a thread started by Detach or
//     whose handle nobody joins, goes to the runtime's Config.OnPanic, and
//     so does Detach's nil function.
package thread
