package fairlyprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

// JobsCollector is a prometheus.Collector reading a job scheduler's
// figures (jobs.Scheduler.MetricsSnapshot) at each scrape. Its metrics:
//
//   - fairly_jobs_queue_wait_seconds: histogram of the time from
//     submission to admission, over jobsmetrics.WaitBuckets;
//   - fairly_jobs_pending_effective_tier{tier}: pending jobs by effective
//     tier;
//   - fairly_jobs_aging_promotions_total: aging steps taken by pending jobs;
//   - fairly_jobs_group_allocation_slots{group}: each group's slots;
//   - fairly_jobs_group_utilization_ratio{group}: running jobs over slots;
//   - fairly_jobs_group_excess_redistributed_total: slots given beyond the
//     groups' nominal weighted shares, added at each reallocation.
type JobsCollector struct {
	src                            jobsmetrics.Source
	wait, tier, promo, alloc, util *prometheus.Desc
	redistributed                  *prometheus.Desc
}

// NewJobsCollector gives a collector for src, a *jobs.Scheduler, for the
// caller to register.
func NewJobsCollector(src jobsmetrics.Source) *JobsCollector {
	return &JobsCollector{
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

// Describe implements prometheus.Collector.
func (c *JobsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.wait, c.tier, c.promo, c.alloc, c.util, c.redistributed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *JobsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.MetricsSnapshot()
	buckets := make(map[float64]uint64, len(jobsmetrics.WaitBuckets))
	var cum uint64
	for i, bound := range jobsmetrics.WaitBuckets {
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
