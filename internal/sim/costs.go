package sim

// Costs are the virtual times, in nanoseconds, of the runtime's own
// operations and of the sink's and echo's work. DefaultCosts holds values
// measured on the development machine (2 cores) by fairbench's calibration
// (bench/harness/simcal.go), which the sim experiment runs again before it
// simulates and prints with its results; docs/simulation.md says how each
// is measured.
type Costs struct {
	Spawn     int64 // a fork: a push on the lazy stack and a preemption point
	Join      int64 // a join of a fork taken back from the lazy stack (or done)
	Service   int64 // a pass through the scheduler's duties with nothing to do
	Round     int64 // a round switch: the aligned primary and closing mailboxes
	Deal      int64 // a deal: split a bank, claim and fill a mailbox
	Receive   int64 // taking a dealt batch into the banks
	Handoff   int64 // a token handed to a parked goroutine (park and resume)
	Arrive    int64 // a thread resumed from outside (its awaited call returned) taking a worker
	Wake      int64 // waking a parked idle worker
	SpinWake  int64 // an idle worker still spinning noticing new work
	Steer     int64 // a thread from outside reaching a worker's inbox
	SinkChunk int64 // the sink's work between two yields: fib(18)
}

// DefaultCosts are the costs measured on the development machine: the
// median of five calibrations (2 cores shared with other work, so the
// wake-ups, which depend on whether an OS thread slept, vary most).
func DefaultCosts() Costs {
	return Costs{
		Spawn: 22, Join: 22, Service: 46, Round: 8, Deal: 471, Receive: 45,
		Handoff: 184, Arrive: 1122, Wake: 1202, SpinWake: 200, Steer: 38, SinkChunk: 10540,
	}
}

// DefaultGrain are the kernels' leaf costs measured on the development
// machine, medians of the same calibrations.
func DefaultGrain() Grain {
	return Grain{FibLeaf: 4038, UTSNode: 2500, BFSEdge: 20, SortKey: 5}
}
