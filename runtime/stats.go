package runtime

import (
	"time"

	"github.com/fairlyprompt/fairly/fairness"
)

// Stats is a snapshot of what the runtime has done since New.
type Stats struct {
	Procs   int
	Elapsed time.Duration
	// Priorities has one entry per priority, lowest rank first.
	Priorities []PriorityStats
	// Rounds is the number of rounds started, over all workers.
	Rounds uint64
	// DealsSent and DealsReceived count sets of threads moved between
	// workers through mailboxes.
	DealsSent, DealsReceived uint64
	// Requests counts requests for work posted by idle workers.
	Requests uint64
	// Donations counts threads run at another priority than the worker's
	// primary one.
	Donations uint64
	// Preemptions counts threads parked at a preemption point so that their
	// worker could run another priority.
	Preemptions uint64
	// Rescues counts workers taken from a goroutine stuck in a thread's code
	// (a call with no preemption point, or a block outside Await) and given
	// to a new one; see docs/design.md.
	Rescues uint64
	// Seizures counts workers whose token a thread resumed after Await or
	// Sleep took at once from a goroutine running a lower priority's code,
	// which the worker would have preempted for it at its next preemption
	// point anyway; see docs/design.md, "Promptness beyond the paper".
	Seizures uint64
	// Promotions counts lazy forks made real threads, and parallel loops
	// split, so that another worker could take the work (docs/design.md).
	Promotions uint64
}

// PriorityStats is the share of the runtime one priority got.
type PriorityStats struct {
	Priority fairness.Priority
	// Share is the criterion's share for the priority, F(p).
	Share float64
	// CPU is the processor time threads of this priority ran.
	CPU time.Duration
	// CPUShare is CPU as a fraction of the time all priorities ran.
	CPUShare float64
	// PrimaryRounds counts rounds in which this was the primary priority.
	PrimaryRounds uint64
}

// Stats returns the counters of the runtime. Processor time of a thread
// that is running now is counted up to the last change of priority on its
// worker, so a snapshot may lag by the length of the current stretch; a
// thread started from outside (thread.Go, thread.Run) is counted in full
// once a Wait for it has returned. A Runtime that New did not make has zero
// Stats.
func (rt *Runtime) Stats() Stats {
	if !rt.started() {
		return Stats{}
	}
	t := rt.e.Totals()
	crit := rt.e.Criterion()
	s := Stats{
		Procs: rt.e.Procs(), Elapsed: t.Elapsed,
		Rounds: t.Rounds, DealsSent: t.DealsSent, DealsReceived: t.DealsReceived,
		Requests: t.Requests, Donations: t.Donations, Preemptions: t.Preemptions,
		Rescues: t.Rescues, Seizures: t.Seizures, Promotions: t.Promotions,
	}
	var total time.Duration
	for r, p := range rt.e.Ranks() {
		s.Priorities = append(s.Priorities, PriorityStats{
			Priority: p, Share: crit.ShareByRank(r), CPU: t.CPU[r], PrimaryRounds: t.PrimaryRounds[r],
		})
		total += t.CPU[r]
	}
	if total > 0 {
		for r := range s.Priorities {
			s.Priorities[r].CPUShare = float64(s.Priorities[r].CPU) / float64(total)
		}
	}
	return s
}
