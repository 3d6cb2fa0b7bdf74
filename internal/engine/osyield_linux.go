package engine

import "syscall"

// osYield gives the worker's OS thread's processor to another runnable
// thread, if any, without leaving the Go P: the raw syscall keeps the P.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
