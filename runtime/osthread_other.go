//go:build !linux

package runtime

// osYield does nothing where sched_yield is not at hand: Gosched would be
// the next best thing for wake-ups, but it keeps the P from polling the
// network (see docs/design.md), which is worse.
func osYield() {}

func gettid() int32 { return 0 }

const canDemote = false

// demoteThreadID is not available: every thread keeps its OS priority.
func demoteThreadID(int32, int) {}

// threadCPU is unknown: the watchdog then judges stalls by time alone.
func threadCPU(int32) (int64, bool) { return 0, false }
