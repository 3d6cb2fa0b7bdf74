//go:build !linux

package harness

// canIdleThreads says idleThread works here: not outside Linux.
const canIdleThreads = false

// idleThread does nothing where Linux's idle class is not at hand.
func idleThread() {}
