package engine

import (
	"os"
	goruntime "runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fairlyprompt/fairly/fairness"
)

// slicesOf gives the time slice of every thread of the process, in ns.
func slicesOf(t *testing.T) map[int]uint64 {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	out := map[int]uint64{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		require.NoError(t, err)
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
		if s != shortSlice {
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
		assert.Equal(t, uint64(shortSlice), s, "thread %d while a runtime lives", tid)
	}
	close(done)
	require.NoError(t, rt2.Close())
	for tid, s := range slicesOf(t) {
		assert.NotEqual(t, uint64(shortSlice), s, "thread %d after the last Close", tid)
		if b, ok := before[tid]; ok {
			assert.Equal(t, b, s, "thread %d: the slice it had before", tid)
		}
	}
}
