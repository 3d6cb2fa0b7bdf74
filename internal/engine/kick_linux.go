package engine

import (
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Kicks: short slices let a woken thread preempt one that has run its
// slice, but only when Linux looks at the core again. It looks when a
// thread wakes there, or blocks, or at the scheduler tick (4 ms at
// HZ=250). A woken thread loses that look when the core's queue holds a
// thread that has waited longer (more lag, an earlier deadline): with
// threads of the normal class queued beyond the cores, that is most of the
// time. The waiting thread then runs once the one picked instead blocks or
// the next look comes. Computing threads never block, so the woken
// network poller waited for the next request's wake-up, or a tick, while a
// computing thread ran far past its slice (docs/design.md, "Kicks while
// others compute", has the trace).
//
// So while the runtimes take short slices because threads of the normal
// class compete (P4) and the goroutines that compute outnumber the
// processors, one kicker thread per processor the process may run on,
// pinned there, sleeps policy.KickEvery at a time: each of its wake-ups is
// a look at its core, and the poller's wait for a core is then at most
// about a kick. A kick costs its core a wake-up and two switches, which a
// virtual machine makes dear (BenchmarkKicks); with a core to spare the
// woken thread has no rival, and no kicks are needed.
//
// Kick invariants (PROTOCOLS.md, P6):
//   - Kickers run while some runtime holds a share (users > 0): the first
//     share starts a generation of them, the last stops it. A runtime holds
//     one while it holds short slices for competing threads and the
//     goroutines that compute outnumber the processors (ticker.go, fitPs).
//   - A stop reaches only its own generation: each has its own eventfd,
//     so a start right after a stop cannot revive old kickers, and the
//     last kicker of a generation to leave closes it, so that none polls a
//     descriptor closed or reused.
//   - A kicker holds no P while it kicks: its whole run of sleeps is one
//     system call as Go's scheduler sees it (kickUntilStopped), so Go's
//     monitor hands its P to others, a stop of the world takes that P
//     without waiting for the kicker's thread (pinned, it may wait for its
//     core), and a wake-up needs no P. Only the stop returns to Go.
//   - Only Close waits for a stop: a kicker leaving its system call waits
//     for a P, and the ticker must not wait with it. Close waits for every
//     generation stopped so far, so no kicker outlives the runtimes (once
//     the workers are gone, Ps are free); the running generation is
//     another runtime's, which waits in its own Close.
//   - A kicker never runs on another processor, and no other goroutine on
//     its pinned thread: it locks the thread and pins it before its first
//     sleep, and unlocks it only once it has unpinned it.

// osKicks counts the runtimes that hold a share of the kicks.
var osKicks struct {
	sync.Mutex
	users   int
	now     *kickers   // the running generation, nil when none runs
	stopped []*kickers // generations stopped whose kickers may not have ended
}

// kickers is a generation of kickers, one per processor.
type kickers struct {
	stop    int // an eventfd: readable once the generation must stop
	running sync.WaitGroup
	left    atomic.Int32 // kickers that have not returned
}

// kick takes (on) or drops a share of the kicks.
func kick(on bool) {
	k := &osKicks
	k.Lock()
	defer k.Unlock()
	if on {
		if k.users++; k.users == 1 {
			k.now = startKickers()
		}
		return
	}
	if k.users--; k.users == 0 && k.now != nil {
		k.now.halt()
		k.stopped = slices.DeleteFunc(append(k.stopped, k.now), func(g *kickers) bool { return g.left.Load() == 0 })
		k.now = nil
	}
}

// settleKicks waits until every generation of kickers stopped so far has
// ended (Close).
func settleKicks() {
	k := &osKicks
	k.Lock()
	gens := k.stopped
	k.stopped = nil
	k.Unlock()
	for _, g := range gens {
		g.running.Wait()
	}
}

// startKickers starts one kicker on each processor the process may run on.
func startKickers() *kickers {
	g := &kickers{stop: -1}
	var cpus unix.CPUSet
	if unix.SchedGetaffinity(unix.Getpid(), &cpus) != nil {
		return g
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return g
	}
	g.stop = fd
	// Two counts beyond the kickers': startKickers' own until every kicker
	// has started, and halt's until it has written, so that the eventfd is
	// closed (and its number free for reuse) only once nobody can use it.
	g.left.Add(2)
	for cpu := range len(cpus) * 64 {
		if cpus.IsSet(cpu) {
			g.running.Add(1)
			g.left.Add(1)
			go g.kicker(cpu)
		}
	}
	g.leave()
	return g
}

// halt stops the generation, once: its eventfd becomes readable for good.
func (g *kickers) halt() {
	if g.stop >= 0 {
		one := [8]byte{1} // an eventfd adds the native-endian uint64 written; any nonzero value will do
		_, _ = unix.Write(g.stop, one[:])
		g.leave()
	}
}

// leave counts a kicker (or startKickers) out; the last closes the eventfd.
func (g *kickers) leave() {
	if g.left.Add(-1) == 0 {
		_ = unix.Close(g.stop)
	}
}

// kicker wakes on processor cpu every policy.KickEvery until the
// generation stops, then lets its thread run anywhere again before it
// gives it back to Go. (Were the goroutine to end locked, Go would end the
// thread; but not the process's main thread, which it keeps, pinned, for
// good.)
func (g *kickers) kicker(cpu int) {
	defer g.running.Done()
	defer g.leave()
	goruntime.LockOSThread() // ends locked, and Go ends the thread, unless it is unpinned
	var was, one unix.CPUSet
	if unix.SchedGetaffinity(0, &was) != nil {
		return
	}
	one.Set(cpu)
	if unix.SchedSetaffinity(0, &one) != nil {
		return
	}
	// The kernel reads fds and writes ts through the system calls; Go
	// neither grows nor moves the stack of a goroutine in one.
	fds := [1]unix.PollFd{{Fd: int32(g.stop), Events: unix.POLLIN}}
	var ts unix.Timespec
	kickUntilStopped(&fds, &ts, unix.NsecToTimespec(int64(policy.KickEvery)))
	if unix.SchedSetaffinity(0, &was) == nil {
		goruntime.UnlockOSThread()
	}
}

// kickUntilStopped sleeps every in ppoll, over and over, until fds[0] is
// readable, all of it between one entersyscall and one exitsyscall, as
// syscall.Syscall makes one call: Go sees a goroutine in a system call,
// and its monitor hands the P to others. Between the two nothing may need
// a P or grow the stack: the function is nosplit, and norace, and calls
// only the raw system call. ppoll writes the time left into ts, so each
// sleep sets it anew.
//
//go:nosplit
//go:norace
func kickUntilStopped(fds *[1]unix.PollFd, ts *unix.Timespec, every unix.Timespec) {
	entersyscall()
	for {
		*ts = every
		n, _, _ := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(fds)), 1, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
		if int(n) > 0 {
			break
		}
	}
	exitsyscall()
}

// entersyscall and exitsyscall are the Go scheduler's own brackets of a
// system call, which syscall.Syscall uses; Go keeps them open to other
// packages by name (go.dev/issue/67401).
//
//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()
