// Package fairlyprom exports fairly's figures to Prometheus: the runtime's
// Stats (per-priority processor time, configured and measured shares,
// rounds, deals, donations, preemptions, rescues) and a job scheduler's
// MetricsSnapshot (queue wait, pending jobs by tier, aging, group
// allocation).
//
// It is a module of its own, github.com/fairlyprompt/fairly/fairlyprom, so
// that programs using fairly without Prometheus do not carry the Prometheus
// client; the runtime and the job scheduler only keep plain counters, and
// the collectors here read them at scrape time. Register a collector with
// the registry of your choice:
//
//	reg.MustRegister(fairlyprom.NewRuntimeCollector(rt))
//	reg.MustRegister(fairlyprom.NewJobsCollector(scheduler))
//
// To export two runtimes from one registry, tell them apart with a constant
// label: prometheus.WrapRegistererWith(prometheus.Labels{"runtime": "api"}, reg).
package fairlyprom
