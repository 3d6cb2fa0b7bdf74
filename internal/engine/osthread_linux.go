package engine

import (
	"bytes"
	"os"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// osYield gives the worker's OS thread's processor to another runnable
// thread, if any, without leaving the Go P: the raw syscall keeps the P.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// currentCPU is the processor the calling OS thread runs on (getcpu; its
// cost: BenchmarkCurrentCPU).
func currentCPU() int32 {
	var cpu uint32
	if _, _, e := syscall.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return -1
	}
	return int32(cpu)
}

// moveToFree moves the calling OS thread at once to the first processor it
// may run on whose bit in taken is clear, then lets it run on all of them
// again, so that it stays there only until the OS moves it: a nudge, not a
// pinning. It stores that processor into at before the move: the worker
// stacked with the caller may run while the caller's thread migrates, and
// if it still saw the caller on their shared processor it would move to the
// same free one (both did, back and forth, every few microseconds). It
// stores -1 into at if the kernel refused, and leaves at alone if no
// processor was free.
func moveToFree(taken uint64, at *atomic.Int32) {
	goruntime.LockOSThread() // both calls on one thread, or another stays pinned
	defer goruntime.UnlockOSThread()
	var was, one unix.CPUSet
	if unix.SchedGetaffinity(0, &was) != nil {
		return
	}
	for cpu := range 64 {
		if taken&(1<<cpu) != 0 || !was.IsSet(cpu) {
			continue
		}
		at.Store(int32(cpu))
		one.Set(cpu)
		if unix.SchedSetaffinity(0, &one) != nil {
			at.Store(-1)
			return
		}
		_ = unix.SchedSetaffinity(0, &was)
		return
	}
}

// setSlices gives every thread of the process the short time slice (short)
// or the kernel's default one, keeping each thread's policy and nice value.
// Threads created later inherit the slice of the thread that creates them,
// and Go creates its threads from its own, so one pass covers the process.
// Unlike nice values and SCHED_IDLE, which an unprivileged process may only
// raise, it may set slices both ways.
//
// A thread that Go clones while a pass runs, from a thread the pass has not
// reached yet, inherits the old slice and is missing from the pass's
// listing. So passes repeat until one changes nothing: every thread it
// listed had the slice, and any thread cloned after its listing began was
// cloned from one that had it. One run in 30 of TestShortSlices under the
// race detector found a thread left with the short slice after the last
// Close when a single pass was made. The passes are bounded, for a process
// that clones threads without end.
func setSlices(short bool) {
	for range maxSlicePasses {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		changed := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			c, err := setSlice(tid, short)
			if err != nil && err != unix.ESRCH {
				return // refused (seccomp, say): leave the rest alone
			}
			changed = changed || c
		}
		if !changed {
			return
		}
	}
}

// maxSlicePasses bounds setSlices's passes over the process's threads.
const maxSlicePasses = 8

// setSlice sets thread tid's slice and reports whether it had another; it
// leaves real-time threads alone.
func setSlice(tid int, short bool) (changed bool, err error) {
	err = changeAttr(tid, func(a *unix.SchedAttr) {
		changed = (a.Runtime == policy.ShortSlice) != short
		a.Runtime = 0 // the kernel's default
		if short {
			a.Runtime = policy.ShortSlice
		}
	})
	return changed, err
}

// gettid is the id of the calling OS thread.
func gettid() int32 {
	tid, _, _ := syscall.RawSyscall(syscall.SYS_GETTID, 0, 0, 0)
	return int32(tid)
}

// threadKey identifies the calling goroutine's OS thread for self.go: its
// thread id, which it also returns as tid. Linux keeps thread ids below
// 1<<22 (PID_MAX_LIMIT).
func threadKey() (key int64, tid int32) {
	t := gettid()
	return int64(t), t
}

// threadCPU is the processor time OS thread tid of the process has used, in
// ns, or -1 if it is not known.
func threadCPU(tid int32) int64 {
	if tid == 0 {
		return -1
	}
	var ts unix.Timespec
	// The clock of one thread: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
	if unix.ClockGettime(^tid<<3|6, &ts) != nil {
		return -1
	}
	return ts.Nano()
}

// spanClock is the calling OS thread's id and its processor time in ns
// (negative if not known), read where a worker's accounting changes rank
// (worker.charge): about half a microsecond, two system calls.
func spanClock() (tid int32, cpu int64) {
	tid = gettid()
	return tid, threadCPU(tid)
}

// threadRunnable reports whether OS thread tid of the process is running or
// waiting for a core (state R), as opposed to sleeping in the kernel (a
// blocked goroutine parks its locked thread there); false if not known.
func threadRunnable(tid int32) bool {
	if tid == 0 {
		return false
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(int(tid)) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'R'
}

// demote makes OS thread tid run only when no thread of normal policy, in
// this process or any other, wants its processor (SCHED_IDLE): a woken
// thread then preempts it at once. Any thread may do that to its process's
// threads. It reports whether Linux agreed.
func demote(tid int32) bool {
	return changeAttr(int(tid), func(a *unix.SchedAttr) { a.Policy = unix.SCHED_IDLE }) == nil
}

// promote gives OS thread tid, demoted, the normal policy back. Linux
// allows that only to a process that may lower nice values (CAP_SYS_NICE,
// or an RLIMIT_NICE of 20 and more); it reports whether it did. A variable,
// so that tests can play the unprivileged process.
var promote = func(tid int32) bool {
	return changeAttr(int(tid), func(a *unix.SchedAttr) { a.Policy = unix.SCHED_NORMAL }) == nil
}

// changeAttr reads thread tid's scheduling attributes, lets change edit
// them and writes them back. Real-time threads are left alone: neither
// slices nor SCHED_IDLE mean anything to them.
func changeAttr(tid int, change func(*unix.SchedAttr)) error {
	var a unix.SchedAttr
	size := unsafe.Sizeof(a)
	if _, _, e := unix.RawSyscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), size, 0, 0, 0); e != 0 {
		return e
	}
	switch a.Policy {
	case unix.SCHED_NORMAL, unix.SCHED_BATCH, unix.SCHED_IDLE:
	default:
		return nil
	}
	a.Size = uint32(size)
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK // unprivileged threads may not clear it
	change(&a)
	if _, _, e := unix.RawSyscall(unix.SYS_SCHED_SETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), 0); e != 0 {
		return e
	}
	return nil
}

// lockTable maps thread ids to goroutines with atomic words and no
// allocation on the way (a lock and an unlock of a thread's goroutine at
// every Await): 1<<10 chunks of 1<<12 slots, a chunk made when a thread id
// in its range first comes (a process's ids lie close together).
type lockTable struct {
	chunks [1 << 10]atomic.Pointer[[1 << 12]atomic.Pointer[gor]]
}

// slot is the word of thread id k, nil for an id out of range.
func (t *lockTable) slot(k int64, grow bool) *atomic.Pointer[gor] {
	if k <= 0 || k >= 1<<22 {
		return nil
	}
	c := &t.chunks[k>>12]
	ch := c.Load()
	if ch == nil {
		if !grow {
			return nil
		}
		c.CompareAndSwap(nil, new([1 << 12]atomic.Pointer[gor]))
		ch = c.Load()
	}
	return &ch[k&(1<<12-1)]
}

func (t *lockTable) load(k int64) *gor {
	if s := t.slot(k, false); s != nil {
		return s.Load()
	}
	return nil
}

func (t *lockTable) store(k int64, g *gor) {
	if s := t.slot(k, true); s != nil {
		s.Store(g)
	}
}

func (t *lockTable) remove(k int64, g *gor) {
	if s := t.slot(k, false); s != nil {
		s.CompareAndSwap(g, nil)
	}
}
