package fairlyprom_test

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairlyprom"
	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

type jobsSource jobsmetrics.Snapshot

func (s jobsSource) MetricsSnapshot() jobsmetrics.Snapshot { return jobsmetrics.Snapshot(s) }

func TestJobsCollectorExportsTheSnapshot(t *testing.T) {
	var h jobsmetrics.Histogram
	h.Observe(0.0005)
	h.Observe(2)
	h.Observe(1e9) // above the last bound
	src := jobsSource{
		QueueWait:           h,
		PendingByTier:       []jobsmetrics.Named{{Name: "bg", Value: 3}},
		AgingPromotions:     7,
		GroupAllocation:     []jobsmetrics.Named{{Name: "a", Value: 4}},
		GroupUtilization:    []jobsmetrics.Named{{Name: "a", Value: 0.5}},
		ExcessRedistributed: 2,
	}
	c := fairlyprom.NewJobsCollector(src)
	assert.Equal(t, map[string]float64{
		"fairly_jobs_queue_wait_seconds":                 3,
		`fairly_jobs_pending_effective_tier{tier="bg"}`:  3,
		"fairly_jobs_aging_promotions_total":             7,
		`fairly_jobs_group_allocation_slots{group="a"}`:  4,
		`fairly_jobs_group_utilization_ratio{group="a"}`: 0.5,
		"fairly_jobs_group_excess_redistributed_total":   2,
	}, gather(t, c))

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	i := slices.IndexFunc(families, func(mf *dto.MetricFamily) bool { return mf.GetName() == "fairly_jobs_queue_wait_seconds" })
	require.GreaterOrEqual(t, i, 0)
	hist := families[i].GetMetric()[0].GetHistogram()
	require.Len(t, hist.GetBucket(), len(jobsmetrics.WaitBuckets))
	assert.Equal(t, uint64(1), hist.GetBucket()[0].GetCumulativeCount(), "1 ms bucket")
	assert.Equal(t, uint64(2), hist.GetBucket()[len(jobsmetrics.WaitBuckets)-1].GetCumulativeCount(), "up to the last bound")
	assert.InDelta(t, 1e9+2.0005, hist.GetSampleSum(), 1e-6)
}
