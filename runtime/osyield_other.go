//go:build !linux

package runtime

import goruntime "runtime"

// osYield lets other goroutines run; without sched_yield it is the best we have.
func osYield() { goruntime.Gosched() }
