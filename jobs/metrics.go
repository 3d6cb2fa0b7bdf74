package jobs

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

// Collectors are the scheduler's Prometheus metrics, for the caller to
// register: queue wait, pending jobs by effective tier, aging promotions,
// group allocation and utilisation, redistributed slots. It is
// jobsmetrics.Collectors(s), kept so that existing callers go on working;
// the admission core itself only counts (MetricsSnapshot), and this file
// is the only one of package jobs that names Prometheus.
func (s *Scheduler) Collectors() []prometheus.Collector { return jobsmetrics.Collectors(s) }
