package runtime

import (
	"syscall"
	"unsafe"
)

// osYield gives the worker's OS thread's processor to another runnable
// thread, if any, without leaving the Go P: the raw syscall keeps the P.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// gettid is the id of the calling OS thread.
func gettid() int32 { return int32(syscall.Gettid()) }

// canDemote says demoteThread works here.
const canDemote = true

// demoteThreadID raises the nice value of OS thread tid of this process (on
// Linux the nice value is per thread). Raising needs no privilege; lowering
// it again does, so a demoted thread stays demoted for life and its
// goroutine keeps it locked until it ends (see goroutines.go).
func demoteThreadID(tid int32, nice int) {
	if tid != 0 {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, int(tid), nice)
	}
}

// threadCPU is the processor time thread tid has used, in ns, and whether
// it could be read. The clock id of another thread's scheduler clock is
// (^tid << 3) | 6 (the kernel's MAKE_THREAD_CPUCLOCK with CPUCLOCK_SCHED).
func threadCPU(tid int32) (int64, bool) {
	if tid == 0 {
		return 0, false
	}
	var ts syscall.Timespec
	id := int64(^tid)<<3 | 6
	_, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
