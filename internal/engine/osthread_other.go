//go:build !linux

package engine

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// osYield does nothing where sched_yield is not at hand: Gosched would be
// the next best thing for wake-ups, but it keeps the P from polling the
// network (see docs/design.md), which is worse.
func osYield() {}

// currentCPU is not known here: every worker seems to share the caller's
// processor, so seize takes any (see seize).
func currentCPU() int32 { return -1 }

// moveToFree cannot move threads here.
func moveToFree(uint64, *atomic.Int32) {}

// setSlices does nothing where the kernel has no per-thread time slices.
func setSlices(bool) {}

// demote does nothing where the OS has no idle scheduling class at hand.
func demote(int32) bool { return false }

// promote has nothing to undo.
func promote(int32) bool { return true }

// threadCPU is not known here.
func threadCPU(int32) int64 { return -1 }

// spanClock is not known here: worker.charge counts wall time.
func spanClock() (tid int32, cpu int64) { return 0, -1 }

// threadRunnable is not known here.
func threadRunnable(int32) bool { return false }

// threadKey is the calling goroutine's id here, where its OS thread's id is
// not at hand: exact, but a few microseconds a lookup (self.go); tid is 0,
// unknown.
func threadKey() (key int64, tid int32) { return int64(goid()), 0 }

// goid is the calling goroutine's id, read from the header of its stack
// trace ("goroutine 123 [running]:"): a few microseconds.
func goid() uint64 {
	var buf [40]byte
	b := buf[:goruntime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// lockTable maps goroutine ids to goroutines here.
type lockTable struct{ m sync.Map }

func (t *lockTable) load(k int64) *gor {
	if v, ok := t.m.Load(k); ok {
		return v.(*gor)
	}
	return nil
}

func (t *lockTable) store(k int64, g *gor) { t.m.Store(k, g) }

func (t *lockTable) remove(k int64, g *gor) { t.m.CompareAndDelete(k, g) }

// kick does nothing where the OS gives no per-thread time slices to
// hasten (kick_linux.go).
func kick(bool) {}

// settleKicks has no kickers to wait for.
func settleKicks() {}
