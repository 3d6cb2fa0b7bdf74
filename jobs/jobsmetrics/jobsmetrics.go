// Package jobsmetrics holds the figures a job scheduler reports: queue
// wait, pending jobs by tier, aging promotions, group allocation and
// utilisation.
//
// The scheduler (package jobs) keeps plain counters and hands them out as a
// Snapshot. The admission path therefore does no metric work beyond adding
// to integers, and this module depends on no metrics library. The module
// github.com/fairlyprompt/fairly/fairlyprom turns a Snapshot into
// Prometheus metrics at scrape time:
//
//	reg.MustRegister(fairlyprom.NewJobsCollector(scheduler))
package jobsmetrics

import "slices"

// WaitBuckets are the upper bounds, in seconds, of the queue-wait
// histogram: 1 ms to about 70 minutes in steps of four.
var WaitBuckets = exponential(0.001, 4, 12)

// exponential gives n bounds from start, each factor times the last.
func exponential(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// Histogram is a histogram over WaitBuckets. Counts[i] counts the
// observations in (WaitBuckets[i-1], WaitBuckets[i]]; the last element
// counts those above the last bound.
type Histogram struct {
	Counts []uint64
	Count  uint64
	Sum    float64
}

// Observe adds one observation.
func (h *Histogram) Observe(v float64) {
	if h.Counts == nil {
		h.Counts = make([]uint64, len(WaitBuckets)+1)
	}
	i, _ := slices.BinarySearch(WaitBuckets, v)
	h.Counts[i]++
	h.Count++
	h.Sum += v
}

// Clone is a copy that does not share the counts.
func (h Histogram) Clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Named is a value under a label (a tier or a group).
type Named struct {
	Name  string
	Value float64
}

// Snapshot is what a scheduler reports at one moment.
type Snapshot struct {
	// QueueWait is the time from submission to admission, in seconds.
	QueueWait Histogram
	// PendingByTier counts pending jobs by effective tier.
	PendingByTier []Named
	// AgingPromotions counts aging steps taken by pending jobs.
	AgingPromotions uint64
	// GroupAllocation is each group's slot allocation.
	GroupAllocation []Named
	// GroupUtilization is each group's running jobs over its allocation.
	GroupUtilization []Named
	// ExcessRedistributed counts slots given beyond nominal weighted
	// shares, added at each reallocation.
	ExcessRedistributed uint64
}

// Source gives a Snapshot; *jobs.Scheduler is one.
type Source interface {
	MetricsSnapshot() Snapshot
}
