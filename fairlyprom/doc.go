// Package fairlyprom exports fairly's figures to Prometheus: a job
// scheduler's MetricsSnapshot (queue wait, pending jobs by tier, aging,
// group allocation).
//
// It is a module of its own, github.com/fairlyprompt/fairly/fairlyprom, so
// that programs using fairly without Prometheus do not carry the Prometheus
// client; the job scheduler only keeps plain counters, and the collector
// here reads them at scrape time. Register it with
// the registry of your choice:
//
//	reg.MustRegister(fairlyprom.NewJobsCollector(scheduler))
package fairlyprom
