package runtime

import (
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
)

// workerStats are counters owned by one worker and read by Stats.
type workerStats struct {
	cpu           []atomic.Int64  // ns run per rank
	primary       []atomic.Uint64 // rounds per primary rank
	rounds        atomic.Uint64
	dealsSent     atomic.Uint64
	dealsReceived atomic.Uint64
	requests      atomic.Uint64
	donations     atomic.Uint64
	preemptions   atomic.Uint64
	rescues       atomic.Uint64
	promotions    atomic.Uint64
}

func newWorkerStats(ranks int) workerStats {
	return workerStats{cpu: make([]atomic.Int64, ranks), primary: make([]atomic.Uint64, ranks)}
}

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
// worker, so a snapshot may lag by the length of the current stretch.
func (rt *Runtime) Stats() Stats {
	crit := rt.crit.Load()
	s := Stats{Procs: len(rt.workers), Elapsed: time.Since(rt.epoch), Priorities: make([]PriorityStats, len(rt.ranks))}
	var total time.Duration
	for r, p := range rt.ranks {
		ps := &s.Priorities[r]
		ps.Priority, ps.Share = p, crit.ShareByRank(r)
		for _, w := range rt.workers {
			ps.CPU += time.Duration(w.stats.cpu[r].Load())
			ps.PrimaryRounds += w.stats.primary[r].Load()
		}
		total += ps.CPU
	}
	if total > 0 {
		for r := range s.Priorities {
			s.Priorities[r].CPUShare = float64(s.Priorities[r].CPU) / float64(total)
		}
	}
	for _, w := range rt.workers {
		st := &w.stats
		s.Rounds += st.rounds.Load()
		s.DealsSent += st.dealsSent.Load()
		s.DealsReceived += st.dealsReceived.Load()
		s.Requests += st.requests.Load()
		s.Donations += st.donations.Load()
		s.Preemptions += st.preemptions.Load()
		s.Rescues += st.rescues.Load()
		s.Promotions += st.promotions.Load()
	}
	return s
}
