//go:build !linux

package engine

// osYield does nothing where sched_yield is not at hand: Gosched would be
// the next best thing for wake-ups, but it keeps the P from polling the
// network (see docs/design.md), which is worse.
func osYield() {}

// currentCPU is not known here: every worker seems to share the caller's
// processor, so seize takes any (see seize).
func currentCPU() int32 { return -1 }

// setSlices does nothing where the kernel has no per-thread time slices.
func setSlices(bool) {}

// gettid has no cheap equivalent here: 0 means unknown, and nothing is demoted.
func gettid() int32 { return 0 }

// demote does nothing where the OS has no idle scheduling class at hand.
func demote(int32) bool { return false }

// promote has nothing to undo.
func promote(int32) bool { return true }

// threadCPU is not known here.
func threadCPU(int32) int64 { return -1 }

// threadRunnable is not known here.
func threadRunnable(int32) bool { return false }
