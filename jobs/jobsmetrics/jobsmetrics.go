// Package jobsmetrics exports a job scheduler's figures to Prometheus.
//
// The scheduler (package jobs) keeps plain counters and hands them out as a
// Snapshot; this package turns a Snapshot into Prometheus metrics at scrape
// time. The admission path therefore does no metric work beyond adding to
// integers, and programs that do not use Prometheus pay nothing for it.
//
//	reg.MustRegister(jobsmetrics.New(scheduler))
package jobsmetrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// WaitBuckets are the upper bounds, in seconds, of the queue-wait
// histogram: 1 ms to about 70 minutes in steps of four.
var WaitBuckets = prometheus.ExponentialBuckets(0.001, 4, 12)

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

// Collector is a prometheus.Collector reading a Source at each scrape.
type Collector struct {
	src                            Source
	wait, tier, promo, alloc, util *prometheus.Desc
	redistributed                  *prometheus.Desc
}

// New gives a collector for src, for the caller to register.
func New(src Source) *Collector {
	return &Collector{
		src:   src,
		wait:  prometheus.NewDesc("fairly_jobs_queue_wait_seconds", "Time from submission to admission.", nil, nil),
		tier:  prometheus.NewDesc("fairly_jobs_pending_effective_tier", "Pending jobs by effective tier.", []string{"tier"}, nil),
		promo: prometheus.NewDesc("fairly_jobs_aging_promotions_total", "Aging steps taken by pending jobs (tier promotions and becoming urgent).", nil, nil),
		alloc: prometheus.NewDesc("fairly_jobs_group_allocation_slots", "Slots allocated to each group.", []string{"group"}, nil),
		util:  prometheus.NewDesc("fairly_jobs_group_utilization_ratio", "Running jobs over allocated slots, per group.", []string{"group"}, nil),
		redistributed: prometheus.NewDesc("fairly_jobs_group_excess_redistributed_total",
			"Slots given to groups beyond their nominal weighted share, counted at each reallocation.", nil, nil),
	}
}

// Collectors is New(src) as a slice, the shape Scheduler.Collectors returns.
func Collectors(src Source) []prometheus.Collector { return []prometheus.Collector{New(src)} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.wait, c.tier, c.promo, c.alloc, c.util, c.redistributed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.MetricsSnapshot()
	buckets := make(map[float64]uint64, len(WaitBuckets))
	var cum uint64
	for i, bound := range WaitBuckets {
		if i < len(s.QueueWait.Counts) {
			cum += s.QueueWait.Counts[i]
		}
		buckets[bound] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.wait, s.QueueWait.Count, s.QueueWait.Sum, buckets)
	for _, t := range s.PendingByTier {
		ch <- prometheus.MustNewConstMetric(c.tier, prometheus.GaugeValue, t.Value, t.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.promo, prometheus.CounterValue, float64(s.AgingPromotions))
	for _, g := range s.GroupAllocation {
		ch <- prometheus.MustNewConstMetric(c.alloc, prometheus.GaugeValue, g.Value, g.Name)
	}
	for _, g := range s.GroupUtilization {
		ch <- prometheus.MustNewConstMetric(c.util, prometheus.GaugeValue, g.Value, g.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.redistributed, prometheus.CounterValue, float64(s.ExcessRedistributed))
}
