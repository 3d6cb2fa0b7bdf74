//go:build !linux

package engine

// osYield does nothing where sched_yield is not at hand: Gosched would be
// the next best thing for wake-ups, but it keeps the P from polling the
// network (see docs/design.md), which is worse.
func osYield() {}

// setSlices does nothing where the kernel has no per-thread time slices.
func setSlices(bool) {}
