package jobsmetrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

type source jobsmetrics.Snapshot

func (s source) MetricsSnapshot() jobsmetrics.Snapshot { return jobsmetrics.Snapshot(s) }

func TestCollectorExportsTheSnapshot(t *testing.T) {
	var h jobsmetrics.Histogram
	h.Observe(0.0005)
	h.Observe(2)
	h.Observe(1e9) // above the last bound
	src := source{
		QueueWait:           h,
		PendingByTier:       []jobsmetrics.Named{{Name: "bg", Value: 3}},
		AgingPromotions:     7,
		GroupAllocation:     []jobsmetrics.Named{{Name: "a", Value: 4}},
		GroupUtilization:    []jobsmetrics.Named{{Name: "a", Value: 0.5}},
		ExcessRedistributed: 2,
	}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(jobsmetrics.New(src)))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range families {
		m := mf.GetMetric()[0]
		switch {
		case m.GetHistogram() != nil:
			got[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
			assert.Equal(t, uint64(1), m.GetHistogram().GetBucket()[0].GetCumulativeCount(), "1 ms bucket")
		case m.GetCounter() != nil:
			got[mf.GetName()] = m.GetCounter().GetValue()
		default:
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{
		"fairly_jobs_queue_wait_seconds":               3,
		"fairly_jobs_pending_effective_tier":           3,
		"fairly_jobs_aging_promotions_total":           7,
		"fairly_jobs_group_allocation_slots":           4,
		"fairly_jobs_group_utilization_ratio":          0.5,
		"fairly_jobs_group_excess_redistributed_total": 2,
	}, got)
	assert.Len(t, jobsmetrics.Collectors(src), 1)
	c := h.Clone()
	c.Counts[0]++
	assert.Equal(t, uint64(1), h.Counts[0], "a clone does not share its counts")
}
