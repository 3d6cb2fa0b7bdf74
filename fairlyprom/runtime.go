package fairlyprom

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairlyprompt/fairly/runtime"
)

// StatsSource gives runtime statistics; *runtime.Runtime is one.
type StatsSource interface {
	Stats() runtime.Stats
}

// RuntimeCollector is a prometheus.Collector reading a runtime's Stats at
// each scrape. Its metrics, all under the prefix fairly_runtime_:
//
//   - procs, uptime_seconds: the workers and the time since the runtime
//     started;
//   - cpu_seconds_total{priority}: processor time threads of each priority
//     ran;
//   - share_ratio{priority}: the share of processor time the criterion
//     gives the priority, F(p);
//   - cpu_share_ratio{priority}: the share it got, its processor time over
//     that of every priority;
//   - primary_rounds_total{priority}: rounds in which it was the primary
//     priority of a worker;
//   - rounds_total, deals_sent_total, deals_received_total, requests_total,
//     donations_total, preemptions_total, rescues_total, promotions_total: the counters of
//     runtime.Stats of the same names.
//
// A priority's label is its name; a name two priorities share is followed
// by "#" and the priority's rank in the runtime's order.
type RuntimeCollector struct {
	src                                 StatsSource
	procs, uptime                       *prometheus.Desc
	cpu, share, cpuShare, primaryRounds *prometheus.Desc
	counters                            []runtimeCounter
}

// runtimeCounter is a counter of runtime.Stats that has no label.
type runtimeCounter struct {
	desc *prometheus.Desc
	get  func(runtime.Stats) uint64
}

// NewRuntimeCollector gives a collector for rt, for the caller to register.
func NewRuntimeCollector(rt StatsSource) *RuntimeCollector {
	name := func(n string) string { return prometheus.BuildFQName("fairly", "runtime", n) }
	byPriority := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc(name(n), help, []string{"priority"}, nil)
	}
	counter := func(n, help string, get func(runtime.Stats) uint64) runtimeCounter {
		return runtimeCounter{prometheus.NewDesc(name(n), help, nil, nil), get}
	}
	return &RuntimeCollector{
		src:    rt,
		procs:  prometheus.NewDesc(name("procs"), "Workers of the runtime: threads that run at once.", nil, nil),
		uptime: prometheus.NewDesc(name("uptime_seconds"), "Time since the runtime started.", nil, nil),
		cpu:    byPriority("cpu_seconds_total", "Processor time threads of the priority ran."),
		share:  byPriority("share_ratio", "Share of processor time the fairness criterion gives the priority, F(p)."),
		cpuShare: byPriority("cpu_share_ratio",
			"Share of processor time the priority got: its processor time over that of every priority."),
		primaryRounds: byPriority("primary_rounds_total", "Rounds in which the priority was a worker's primary priority."),
		counters: []runtimeCounter{
			counter("rounds_total", "Rounds started, over all workers.", func(s runtime.Stats) uint64 { return s.Rounds }),
			counter("deals_sent_total", "Sets of threads a worker sent to another through a mailbox.",
				func(s runtime.Stats) uint64 { return s.DealsSent }),
			counter("deals_received_total", "Sets of threads a worker received through its mailboxes.",
				func(s runtime.Stats) uint64 { return s.DealsReceived }),
			counter("requests_total", "Requests for work posted by idle workers.", func(s runtime.Stats) uint64 { return s.Requests }),
			counter("donations_total", "Threads run at another priority than their worker's primary one.",
				func(s runtime.Stats) uint64 { return s.Donations }),
			counter("preemptions_total", "Threads parked at a preemption point so that their worker could run another priority.",
				func(s runtime.Stats) uint64 { return s.Preemptions }),
			counter("rescues_total", "Workers taken from a goroutine stuck in a thread's code and given to a new one.",
				func(s runtime.Stats) uint64 { return s.Rescues }),
			counter("seizures_total", "Workers whose token a resumed thread of higher priority took at once from a goroutine running lower-priority code.",
				func(s runtime.Stats) uint64 { return s.Seizures }),
			counter("promotions_total", "Lazy forks made real threads, and parallel loops split, so that another worker could take the work.",
				func(s runtime.Stats) uint64 { return s.Promotions }),
		},
	}
}

// Describe implements prometheus.Collector.
func (c *RuntimeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.procs, c.uptime, c.cpu, c.share, c.cpuShare, c.primaryRounds} {
		ch <- d
	}
	for _, k := range c.counters {
		ch <- k.desc
	}
}

// Collect implements prometheus.Collector.
func (c *RuntimeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.procs, prometheus.GaugeValue, float64(s.Procs))
	ch <- prometheus.MustNewConstMetric(c.uptime, prometheus.GaugeValue, s.Elapsed.Seconds())
	for i, p := range s.Priorities {
		label := priorityLabel(s.Priorities, i)
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, p.CPU.Seconds(), label)
		ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, p.Share, label)
		ch <- prometheus.MustNewConstMetric(c.cpuShare, prometheus.GaugeValue, p.CPUShare, label)
		ch <- prometheus.MustNewConstMetric(c.primaryRounds, prometheus.CounterValue, float64(p.PrimaryRounds), label)
	}
	for _, k := range c.counters {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, float64(k.get(s)))
	}
}

// priorityLabel is the name of ps[i].Priority, with "#rank" added when
// another priority has the same name.
func priorityLabel(ps []runtime.PriorityStats, i int) string {
	name := ps[i].Priority.String()
	for j := range ps {
		if j != i && ps[j].Priority.String() == name {
			return fmt.Sprintf("%s#%d", name, i)
		}
	}
	return name
}
