package engine

import (
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// threadIDs lists the threads of the process.
func threadIDs(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	tids := make([]int, len(tasks))
	for i, task := range tasks {
		tids[i], err = strconv.Atoi(task.Name())
		require.NoError(t, err)
	}
	return tids
}

// slicesOf gives the time slice of every thread of the process, in ns.
func slicesOf(t *testing.T) map[int]uint64 {
	t.Helper()
	out := map[int]uint64{}
	for _, tid := range threadIDs(t) {
		var a unix.SchedAttr
		if _, _, e := unix.RawSyscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e == 0 {
			out[tid] = a.Runtime
		}
	}
	return out
}

// TestShortSlices: while a runtime lives every thread of the process has
// the short slice, threads Go starts meanwhile included; the last Close
// gives the default back, and a second runtime neither shortens twice nor
// restores early.
func TestShortSlices(t *testing.T) {
	before := slicesOf(t)
	c := fairness.Uniform(fairness.NewOrder())
	rt := New(testConfig(2, c))
	for tid, s := range slicesOf(t) {
		if s != policy.ShortSlice {
			_ = rt.Close()
			t.Skipf("the kernel keeps thread %d at a %d ns slice: no custom slices before Linux 6.12", tid, s)
		}
	}
	rt2 := New(testConfig(1, c))
	// Make Go start more threads: goroutines that each hold one.
	done := make(chan struct{})
	for range 4 {
		go func() {
			goruntime.LockOSThread() // its thread ends with it
			<-done
		}()
	}
	require.NoError(t, rt.Close())
	for tid, s := range slicesOf(t) {
		assert.Equal(t, uint64(policy.ShortSlice), s, "thread %d while a runtime lives", tid)
	}
	close(done)
	require.NoError(t, rt2.Close())
	for tid, s := range slicesOf(t) {
		assert.NotEqual(t, uint64(policy.ShortSlice), s, "thread %d after the last Close", tid)
		if b, ok := before[tid]; ok {
			assert.Equal(t, b, s, "thread %d: the slice it had before", tid)
		}
	}
}

// policyOf gives the scheduling policy of OS thread tid, -1 once it is gone.
func policyOf(tid int32) int {
	var a unix.SchedAttr
	if _, _, e := unix.RawSyscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e != 0 {
		return -1
	}
	return int(a.Policy)
}

// idleThreads lists the threads of the process in SCHED_IDLE, but the
// main thread: Go cannot end it when a goroutine locked to it exits, and
// wedges it for good instead, so that it serves no goroutine either.
func idleThreads(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	var idle []int
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		require.NoError(t, err)
		if tid != os.Getpid() && policyOf(int32(tid)) == unix.SCHED_IDLE {
			idle = append(idle, tid)
		}
	}
	return idle
}

// TestDemotion: the OS thread of a thread that computes detached is demoted
// to SCHED_IDLE; when the thread comes back the OS thread gets the normal
// policy again, or, where Linux refuses that, ends with its goroutine once
// the thread is over, so that no demoted thread ever serves other
// goroutines. KeepOSPriority (Demote off) demotes nothing. Unasked, with
// nothing waiting for its worker, the watchdog revokes a computing thread
// after a round and tells it from a blocked one by its OS thread's
// processor time: it is demoted too.
func TestDemotion(t *testing.T) {
	cases := []struct {
		name                     string
		demote, refused, unasked bool
	}{
		{"promoted back", true, false, false},
		{"refused promotion", true, true, false},
		{"kept", false, false, false},
		{"unasked", true, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refused {
				old := promote
				promote = func(int32) bool { return false }
				defer func() { promote = old }()
			}
			rt, lo, hi := levelsWith(t, 1, 50, 50, func(cfg *Config) { cfg.Demote = tc.demote })
			var stop atomic.Bool
			var tid atomic.Int32
			spun := submit(t, rt, lo, func(*Task) {
				tid.Store(gettid()) // thread code keeps its OS thread
				spinUntil(&stop, patience)
			})
			require.True(t, eventually(func() bool { return tid.Load() != 0 }))
			time.Sleep(5 * time.Millisecond)         // no preemption point for longer than policy.StaleAfter
			submit(t, rt, hi, func(*Task) {}).Wait() // revokes the spinner's worker
			if tc.demote {
				assert.True(t, eventually(func() bool { return policyOf(tid.Load()) == unix.SCHED_IDLE }),
					"demoted while it computes detached")
			} else {
				time.Sleep(20 * time.Millisecond) // twenty ticks of the watchdog
				assert.Equal(t, unix.SCHED_NORMAL, policyOf(tid.Load()), "demoted with Demote off")
			}
			stop.Store(true)
			spun.Wait()
			switch {
			case tc.refused && int(tid.Load()) != os.Getpid(): // the main thread is wedged instead
				assert.True(t, eventually(func() bool { return policyOf(tid.Load()) == -1 }),
					"the demoted OS thread ends with its goroutine")
			case tc.refused:
			default:
				assert.True(t, eventually(func() bool { return policyOf(tid.Load()) == unix.SCHED_NORMAL }),
					"the OS thread has the normal policy again")
			}
			require.NoError(t, rt.Close())
			assert.Empty(t, idleThreads(t), "no thread of the process stays demoted")
		})
	}
}

// TestThreadRunnable: the watchdog's signs of a computing thread read a
// spinning OS thread as runnable and using processor time, and one whose
// goroutine blocks as neither.
func TestThreadRunnable(t *testing.T) {
	var spinTid, blockTid atomic.Int32
	var stop atomic.Bool
	release := make(chan struct{})
	go func() {
		goruntime.LockOSThread() // its thread ends with it
		spinTid.Store(gettid())
		for !stop.Load() {
		}
	}()
	go func() {
		goruntime.LockOSThread()
		blockTid.Store(gettid())
		<-release
	}()
	require.True(t, eventually(func() bool { return spinTid.Load() != 0 && blockTid.Load() != 0 }))
	defer close(release)
	defer stop.Store(true)
	assert.True(t, eventually(func() bool { return !threadRunnable(blockTid.Load()) }), "a blocked thread sleeps")
	// Go may preempt the spinning goroutine, whose locked thread then waits
	// for a P in the kernel for a moment.
	assert.True(t, eventually(func() bool { return threadRunnable(spinTid.Load()) }), "a spinning thread is runnable")
	before := threadCPU(spinTid.Load())
	assert.True(t, eventually(func() bool { return threadCPU(spinTid.Load()) > before }), "a spinning thread uses processor time")
	assert.GreaterOrEqual(t, threadCPU(blockTid.Load()), int64(0))
	assert.Equal(t, int64(-1), threadCPU(0), "no thread id, no processor time")
}

// TestNoThreadLeftDemoted: threads that block outside Await and come back
// within microseconds of their revocation, over and over, leave no OS
// thread demoted once they are done. (A revoker that listed a goroutine for
// demotion after its swap, rather than with it, let the goroutine come back
// first; the stale entry later demoted a thread that went back to Go's
// pool. Machines that other processes keep busy showed it.)
func TestNoThreadLeftDemoted(t *testing.T) {
	TestBlockingOutsideAwait(t)
	TestStressForkJoinRevoke(t)
	time.Sleep(10 * time.Millisecond) // ten ticks: a stale entry would be demoted by now
	assert.Empty(t, idleThreads(t), "no thread of the process stays demoted")
}

// TestCurrentCPU: the processor a thread runs on is one of the machine's,
// and the one it was moved to when its affinity allows only that one.
func TestCurrentCPU(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var old unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &old))
	defer func() { _ = unix.SchedSetaffinity(0, &old) }()
	for cpu := range 1024 { // a unix.CPUSet's processors
		if !old.IsSet(cpu) {
			continue
		}
		var one unix.CPUSet
		one.Set(cpu)
		require.NoError(t, unix.SchedSetaffinity(0, &one))
		assert.Equal(t, int32(cpu), currentCPU())
	}
}

// BenchmarkCurrentCPU: what a worker pays after each periodic yield to
// publish its processor (seize).
func BenchmarkCurrentCPU(b *testing.B) {
	for b.Loop() {
		currentCPU()
	}
}

// skipWithoutSlices skips a test on a kernel that does not take custom
// time slices (before Linux 6.12): the process shortens its slices for a
// moment and reads them back.
func skipWithoutSlices(t *testing.T) {
	t.Helper()
	shortenSlices(true)
	supported := slicesOf(t)[os.Getpid()] == policy.ShortSlice
	shortenSlices(false)
	if !supported {
		t.Skip("no custom slices before Linux 6.12")
	}
}

// TestShortSlicesWhileOthersCompute: without ShortSlices, the threads of
// the process get the short slice while goroutines outside the runtime
// compute beside its busy workers (the runtime then reserves Ps for them),
// the runtime takes a share of the kicks once they outnumber the
// processors, and both end once those goroutines are gone. (That none come
// with a core to spare is not checked: other work on the machine keeps
// goroutines waiting for a P, and they count as computing.)
func TestShortSlicesWhileOthersCompute(t *testing.T) {
	skipWithoutSlices(t)
	prev := goruntime.GOMAXPROCS(1)
	t.Cleanup(func() { goruntime.GOMAXPROCS(prev) })
	o := fairness.NewOrder()
	lo := o.New("lo")
	cfg := testConfig(1, fairness.Uniform(o))
	cfg.ShortSlices = false
	rt := New(cfg)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	base := goruntime.GOMAXPROCS(0)
	var stop atomic.Bool
	busy := submit(t, rt, lo, func(tk *Task) {
		for !stop.Load() {
			tk.Yield()
		}
	})
	var hogs sync.WaitGroup
	hog := func() { // an ordinary goroutine that computes
		hogs.Go(func() {
			for !stop.Load() {
			}
		})
	}
	hog()
	short := eventually(func() bool { return slicesOf(t)[os.Getpid()] == policy.ShortSlice })
	raised := goruntime.GOMAXPROCS(0) > base
	// One goroutine more per processor: the goroutines that compute
	// outnumber the processors, and the kicks come.
	for range goruntime.NumCPU() {
		hog()
	}
	kicked := eventually(func() bool { return kickShares() > 0 })
	stop.Store(true)
	busy.Wait()
	hogs.Wait()
	assert.True(t, short, "no short slices beside a computing goroutine")
	assert.True(t, raised, "GOMAXPROCS stayed at %d beside a computing goroutine", base)
	assert.True(t, kicked, "no kicks beside more computing goroutines than processors")
	assert.True(t, seldom(func() bool { return slicesOf(t)[os.Getpid()] != policy.ShortSlice }),
		"the short slices stayed after the goroutines ended")
	assert.True(t, eventually(func() bool { return kickShares() == 0 }), "the kicks stayed after the goroutines ended")
}

// seldom is eventually for a condition on the short slices, which stay
// while the collector runs (P4): it looks every 100 ms, since reading the
// process's threads allocates, and looking every millisecond would keep
// the collector, and the slices, going.
func seldom(cond func() bool) bool { return eventuallyEvery(100*time.Millisecond, cond) }

// TestShortSlicesWhileCollecting: the runtime takes short slices while
// Go's collector runs, with no other goroutine computing, and gives them
// back once no cycle started for policy.CollectorQuiet (P4); with Demote
// off (KeepOSPriority) it takes none.
func TestShortSlicesWhileCollecting(t *testing.T) {
	skipWithoutSlices(t)
	for _, demote := range []bool{true, false} {
		t.Run(map[bool]string{true: "default", false: "kept"}[demote], func(t *testing.T) {
			o := fairness.NewOrder()
			cfg := testConfig(1, fairness.Uniform(o))
			cfg.ShortSlices = false
			cfg.Demote = demote
			rt := New(cfg)
			t.Cleanup(func() { require.NoError(t, rt.Close()) })
			short := func() bool { return slicesOf(t)[os.Getpid()] == policy.ShortSlice }
			collect := func() bool { goruntime.GC(); return short() }
			if !demote {
				for range 20 {
					goruntime.GC()
					time.Sleep(time.Millisecond) // a tick
				}
				assert.False(t, short(), "KeepOSPriority takes no short slices")
				return
			}
			assert.True(t, eventually(collect), "no short slices while the collector runs")
			assert.True(t, seldom(func() bool { return !short() }), "the short slices stayed after the collections")
		})
	}
}

// TestLowering: a thread of a rank below one with a share runs in the idle
// class (lower.go, O1), a thread of the top rank on a thread of the normal
// class; a collection turns lowering off and raises the lowered thread
// (O3); Close leaves no thread of the process lowered; KeepOSPriority
// (Demote off) lowers nothing.
func TestLowering(t *testing.T) {
	if !canRaise() {
		t.Skip("this process may not raise a thread it lowered (no CAP_SYS_NICE)")
	}
	for _, demote := range []bool{true, false} {
		t.Run(map[bool]string{true: "lowered", false: "kept"}[demote], func(t *testing.T) {
			rt, lo, hi := levelsWith(t, 1, 50, 50, func(cfg *Config) { cfg.Demote = demote })
			var stop atomic.Bool
			var tid atomic.Int32
			spun := submit(t, rt, lo, func(tk *Task) {
				end := time.Now().Add(patience)
				for !stop.Load() && time.Now().Before(end) {
					tid.Store(gettid()) // a revocation may move the thread to another OS thread
					tk.Yield()          // cooperative: a preemption point at every turn
				}
			})
			require.True(t, eventually(func() bool { return tid.Load() != 0 }))
			lowered := func() bool { return policyOf(tid.Load()) == unix.SCHED_IDLE }
			if demote {
				require.True(t, eventually(lowered), "the low rank's thread lowered")
			} else {
				time.Sleep(20 * time.Millisecond) // twenty ticks
				require.False(t, lowered(), "KeepOSPriority lowers nothing")
			}
			var hiPolicy atomic.Int32
			submit(t, rt, hi, func(*Task) { hiPolicy.Store(int32(policyOf(gettid()))) }).Wait()
			assert.Equal(t, int32(unix.SCHED_NORMAL), hiPolicy.Load(), "the top rank runs in the normal class")
			if demote {
				require.True(t, eventually(lowered), "lowered again once the low rank runs")
				goruntime.GC() // a collection turns lowering off for policy.CollectorQuiet
				assert.True(t, eventually(func() bool { return !lowered() }), "raised while the collector works")
			}
			stop.Store(true)
			spun.Wait()
			require.NoError(t, rt.Close())
			assert.Empty(t, idleThreads(t), "no thread lowered after Close")
		})
	}
}

// TestStarvingOverAWindow: the ticker's look for a starved lowered holder
// (lower.go, O5) compares processor times of one thread over
// policy.StarveWindow. A holder that parked and came back on another OS
// thread starts a new window (the old code compared two threads' times and
// saw starvation in the difference); a window shorter than StarveWindow
// tells nothing; a runnable thread that got less than 1/ComputingFraction
// of a whole window is starved.
func TestStarvingOverAWindow(t *testing.T) {
	// Two OS threads, locked to goroutines that spin until the end: the
	// first has run for a while before the second starts.
	var stop atomic.Bool
	t.Cleanup(func() { stop.Store(true) })
	spinner := func() <-chan int32 {
		tid := make(chan int32, 1)
		go func() {
			goruntime.LockOSThread()
			tid <- gettid()
			for !stop.Load() {
			}
		}()
		return tid
	}
	old := <-spinner()
	time.Sleep(50 * time.Millisecond) // old runs up some processor time
	fresh := <-spinner()

	g := &gor{}
	w := &worker{}
	w.holder.Store(g)
	rt := &Runtime{settings: settings{workers: []*worker{w}}}
	window := int64(policy.StarveWindow)

	g.lowTid.Store(old)
	now := int64(time.Hour) // rt.now's clock is the test's to choose here
	assert.False(t, rt.starving(now), "a first look starts a window")
	g.lowTid.Store(fresh) // the holder came back on another thread
	now += 10 * window
	assert.False(t, rt.starving(now), "another thread starts a new window")
	assert.False(t, rt.starving(now+window/2), "half a window tells nothing")
	// Thread fresh runs for real milliseconds at most, while the clock
	// passed here says a thousand windows go by each look: it gets far less
	// than its share, and it is runnable whenever it is not parked by a
	// stop of the world.
	assert.True(t, eventually(func() bool {
		now += 1000 * window
		return rt.starving(now)
	}), "a runnable thread that ran next to nothing over a window")
}

// TestUnstackFindsAStackedWorker: two awake workers last seen on one
// processor find each other in its slot of rt.onCPU, and the one that
// looks second moves its thread to a free processor; a sleeping worker in
// the slot, or one that has moved on, leaves the looker where it is.
func TestUnstackFindsAStackedWorker(t *testing.T) {
	if goruntime.NumCPU() < 2 {
		t.Skip("one processor: nowhere to move")
	}
	goruntime.LockOSThread() // unstack moves the caller's thread, for a moment
	defer goruntime.UnlockOSThread()
	rt := &Runtime{}
	rt.onCPU = make([]cpuSlot, 64)
	a, b := &worker{}, &worker{}
	for _, w := range []*worker{a, b} {
		w.rt = rt
		w.cpu.Store(0)
	}
	rt.workers = []*worker{a, b}

	a.unstack(0)
	assert.Equal(t, int32(0), a.cpu.Load(), "alone in its slot: stays")
	b.unstack(0)
	assert.NotEqual(t, int32(0), b.cpu.Load(), "b found a on its processor and moved")

	b.cpu.Store(0)
	a.sleeper.Store(&gor{}) // a sleeps, last seen on processor 0
	rt.onCPU[0].w.Store(a)
	b.unstack(0)
	assert.Equal(t, int32(0), b.cpu.Load(), "a sleeping worker does not count")

	a.sleeper.Store(nil)
	a.cpu.Store(1) // a is awake, but was seen on processor 1 since
	rt.onCPU[0].w.Store(a)
	b.unstack(0)
	assert.Equal(t, int32(0), b.cpu.Load(), "a worker seen elsewhere since does not count")
}
