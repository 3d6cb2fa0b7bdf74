package engine

import (
	"sync/atomic"
	"time"
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
	seizures      atomic.Uint64
	promotions    atomic.Uint64
}

func newWorkerStats(ranks int) workerStats {
	return workerStats{cpu: make([]atomic.Int64, ranks), primary: make([]atomic.Uint64, ranks)}
}

// Totals are the workers' counters summed, for package runtime's Stats.
type Totals struct {
	Elapsed time.Duration
	// CPU and PrimaryRounds are by rank, lowest first.
	CPU                                         []time.Duration
	PrimaryRounds                               []uint64
	Rounds, DealsSent, DealsReceived, Requests  uint64
	Donations, Preemptions, Rescues, Promotions uint64
	Seizures                                    uint64
}

// Totals sums the workers' counters. Processor time of a thread that is
// running now is counted up to the last change of priority on its worker,
// so a snapshot may lag by the length of the current stretch.
func (rt *Runtime) Totals() Totals {
	s := Totals{Elapsed: time.Since(rt.epoch), CPU: make([]time.Duration, len(rt.ranks)), PrimaryRounds: make([]uint64, len(rt.ranks))}
	for _, w := range rt.workers {
		st := &w.stats
		for r := range rt.ranks {
			s.CPU[r] += time.Duration(st.cpu[r].Load())
			s.PrimaryRounds[r] += st.primary[r].Load()
		}
		s.Rounds += st.rounds.Load()
		s.DealsSent += st.dealsSent.Load()
		s.DealsReceived += st.dealsReceived.Load()
		s.Requests += st.requests.Load()
		s.Donations += st.donations.Load()
		s.Preemptions += st.preemptions.Load()
		s.Rescues += st.rescues.Load()
		s.Seizures += st.seizures.Load()
		s.Promotions += st.promotions.Load()
	}
	return s
}
