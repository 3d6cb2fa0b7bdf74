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
	Wake      int64 // waking a parked idle worker
	SpinWake  int64 // an idle worker still spinning noticing new work
	Steer     int64 // a thread from outside reaching a worker's inbox
	SinkChunk int64 // the sink's work between two yields: fib(18)
}

// DefaultCosts are the costs measured on the development machine.
func DefaultCosts() Costs {
	return Costs{
		Spawn: 23, Join: 24, Service: 86, Round: 9, Deal: 395, Receive: 36,
		Handoff: 206, Wake: 7915, SpinWake: 169, Steer: 49, SinkChunk: 10609,
	}
}

// DefaultGrain are the kernels' leaf costs measured on the development
// machine.
func DefaultGrain() Grain {
	return Grain{FibLeaf: 2300, UTSNode: 1400, BFSEdge: 37, SortKey: 7}
}
