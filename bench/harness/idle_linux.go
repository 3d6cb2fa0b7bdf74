package harness

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// canIdleThreads says idleThread works here: the stall experiment's tuned
// plain-Go baseline needs it.
const canIdleThreads = true

// idleThread moves the calling OS thread to Linux's idle scheduling class
// (SCHED_IDLE), keeping its other attributes; any process may do that to
// its own threads. The caller must stay locked to the thread for good.
func idleThread() {
	var a unix.SchedAttr
	size := unsafe.Sizeof(a)
	if _, _, e := unix.RawSyscall6(unix.SYS_SCHED_GETATTR, 0, uintptr(unsafe.Pointer(&a)), size, 0, 0, 0); e != 0 {
		return
	}
	a.Size = uint32(size)
	a.Policy = unix.SCHED_IDLE
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(&a)), 0)
}
