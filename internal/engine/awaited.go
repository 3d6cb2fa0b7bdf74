package engine

import (
	"reflect"
	goruntime "runtime"
)

// Which goroutine runs an awaited call.
//
// A function that a thread awaits (Task.Suspend, thread.AwaitContext) runs
// without a processor and unlocked from its OS thread, so the lookup of
// self.go does not see it; yet its thread is suspended, and Close, which
// waits for every thread, would wait for the very call that made it. Every
// awaited call runs inside Awaited, whose frame marks the goroutine's stack
// for as long as the call lasts, and Close looks for that frame on its
// caller's stack (inAwaited). The mark costs an Await one plain call; the
// look, a walk of the caller's stack, is paid only by Close. The frame does
// not say which runtime's thread the call serves, so Close refuses any
// awaited call, of whichever runtime.

// Awaited calls f, a call that a thread awaits, and marks it on the
// goroutine's stack while it runs. Package thread runs AwaitContext's call
// on a goroutine of its own, through Awaited.
//
//go:noinline
func Awaited(f func()) { f() }

// awaitedName is the name the frames of Awaited carry.
var awaitedName = goruntime.FuncForPC(reflect.ValueOf(Awaited).Pointer()).Name()

// inAwaited reports whether the caller runs inside Awaited.
func inAwaited() bool {
	pcs := make([]uintptr, 64)
	for {
		n := goruntime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := goruntime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function == awaitedName {
			return true
		}
		if !more {
			return false
		}
	}
}
