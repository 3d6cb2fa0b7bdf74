// Package sim is a discrete-event simulator of fairly's scheduler: P
// virtual workers on a virtual clock run thread DAGs with the runtime's own
// banks (package bank), mailboxes and request cells (package mailbox),
// criterion (package fairness) and scheduling decisions (internal/policy),
// so that the algorithm can be watched at 16 to 128 workers on a machine
// with two cores, apart from what Go's runtime and the hardware add.
//
// What is modelled rather than run: the time things take (thread work from
// the kernels' shapes, the runtime's own operations from Costs), goroutines
// (a virtual goroutine holds a thread's frames), the network (an
// interactive thread arrives when a Poisson process says so, on a running
// goroutine that takes a worker as a resumed thread does), and the
// operating system sharing the P cores between workers and the goroutines
// whose tokens were revoked (cores.go). See docs/simulation.md.
//
// One seed gives one schedule: the simulator reads no clock, iterates no
// map, and draws every random number from seeded PCG generators. Its event
// log can be recorded and replayed, event by event (Replay).
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

// Params are the runtime's tunables, in virtual nanoseconds, as in
// runtime.Config and internal/policy's tuning constants.
type Params struct {
	Quantum      int64 // round length (policy.DefaultQuantum)
	DealInterval int64 // between two deals of a worker (policy.DefaultDealInterval)
	Interrupt    int64 // ticker period (policy.DefaultInterrupt)
	Budget       int64 // prompt budget per round (default the whole round: policy.DefaultBudget)
	CheckEvery   int   // preemption points between two passes through the scheduler (policy.CheckEvery)
	IdleSpin     int64 // how long an idle worker spins before it parks (policy.IdleSpin)
	StaleAfter   int64 // without a preemption point, a worker is stale (policy.StaleAfter)
	NoBorrow     bool  // Config.NoPromptBorrowing
}

// DefaultParams are the runtime's defaults, from internal/policy.
func DefaultParams() Params {
	q := int64(policy.DefaultQuantum)
	return Params{
		Quantum: q, DealInterval: int64(policy.DefaultDealInterval), Interrupt: int64(policy.DefaultInterrupt),
		Budget: policy.DefaultBudget(q), CheckEvery: policy.CheckEvery,
		IdleSpin: int64(policy.IdleSpin), StaleAfter: int64(policy.StaleAfter),
	}
}

// Config is one simulated run: a kernel at low priority, optionally a time
// sink at medium priority and interactive threads at high priority, under a
// three-priority criterion, as in fairbench's Table 1 and Table 3.
type Config struct {
	Procs int
	// Criterion gives the weights of the high, medium and low priorities,
	// as fairbench writes them (50-25-25).
	Criterion [3]float64
	// Kernel runs at low priority from time 0; the run ends when it ends.
	Kernel *Kernel
	// Sink runs a time sink at medium priority: 2P threads that compute
	// forever, yielding between chunks, like fairbench's.
	Sink bool
	// Lead is how long the sink and the interactive arrivals run before
	// the kernel is submitted, as fairbench starts them first; Result.Time
	// counts from the kernel's submission.
	Lead int64
	// Rate is the rate of interactive arrivals (per virtual second) at high
	// priority, each a thread of EchoWork nanoseconds; 0 for none.
	Rate     float64
	EchoWork int64
	Seed     uint64
	Params   Params
	Costs    Costs
	// Record keeps the event log in Result.Log (its digest is always kept).
	Record bool
	// Limit is the virtual time at which a run that has not ended fails (0:
	// a thousand rounds).
	Limit int64
}

// The three priorities' indices in Config.Criterion and Result.CPU.
const (
	High = iota
	Medium
	Low
)

// Result is what a run measured.
type Result struct {
	// Time is how long the kernel took, from its submission to its end.
	Time int64
	// Responses are the interactive threads' response times, arrival to
	// end, and Arrivals their arrival times, in order of arrival; Pending
	// are the arrival times of those that had not ended with the kernel.
	Responses []int64
	Arrivals  []int64
	Pending   []int64
	// Waits are the interactive threads' waits for a worker, arrival to
	// their first instruction, in the order of Responses: the part of a
	// response that fairbench's real records call fairly's part.
	Waits []int64
	// Gap is the longest stretch of a thread's code without a preemption
	// point.
	Gap int64
	// CPU is the processor time spent on each priority (High, Medium, Low),
	// runtime operations included; Detached is the time threads computed
	// after their token was revoked, on the P cores that the workers share
	// with them (cores.go), which CPU does not count.
	CPU      [3]int64
	Detached [3]int64
	// Idle is the processor time with no thread running, over P·Time.
	Idle float64
	// Counters over the whole run, summed over the workers.
	Rounds, Deals, Requests, Donations, Preemptions, Promotions, Rescues, Seizures int
	// Events is how many events ran; Digest sums up the event log.
	Events int
	Digest uint64
	Log    []Entry
}

// sim is one run in progress.
type sim struct {
	cfg     Config
	p       Params
	c       Costs
	crit    *fairness.Criterion
	rank    [3]int // rank of High, Medium, Low
	ranks   int
	clock   clock
	log     log
	workers []*vworker
	open    [][]uint64 // by rank: bit v%64 of open[r][v/64] says worker v's mailbox r is open (the runtime's index of open mailboxes)
	steers  int
	nextID  int64
	arrive  *rand.Rand
	res     Result
	kernel  *vtask
	done    bool
	ticks   []int
	beats   []uint64
}

// afterEvent, when set (by tests), sees the simulation after every event.
var afterEvent func(s *sim, e event)

// Run simulates cfg.
func Run(cfg Config) (*Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	return s.run()
}

func newSim(cfg Config) (*sim, error) {
	if cfg.Procs < 1 {
		return nil, fmt.Errorf("sim: %d workers", cfg.Procs)
	}
	if cfg.Kernel == nil {
		return nil, errors.New("sim: no kernel")
	}
	switch {
	case !(cfg.Rate >= 0 && cfg.Rate <= 1e9):
		return nil, fmt.Errorf("sim: arrival rate %v is not in [0, 1e9] per second", cfg.Rate)
	case cfg.Rate > 0 && cfg.EchoWork <= 0:
		return nil, fmt.Errorf("sim: interactive work %d ns is not positive", cfg.EchoWork)
	case cfg.Lead < 0 || cfg.Limit < 0:
		return nil, fmt.Errorf("sim: negative lead (%d) or limit (%d)", cfg.Lead, cfg.Limit)
	}
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams()
	}
	if cfg.Costs == (Costs{}) {
		cfg.Costs = DefaultCosts()
	}
	if cfg.Limit == 0 {
		cfg.Limit = 1000 * cfg.Params.Quantum
	}
	o := fairness.NewOrder()
	hi, mid, lo := o.New("interactive"), o.New("sink"), o.New("kernel")
	if err := errors.Join(o.Less(lo, mid), o.Less(mid, hi)); err != nil {
		return nil, err
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: cfg.Criterion[High], mid: cfg.Criterion[Medium], lo: cfg.Criterion[Low]})
	if err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, p: cfg.Params, c: cfg.Costs, crit: crit, ranks: crit.Len(),
		arrive: rand.New(rand.NewPCG(cfg.Seed, 0xa77))}
	for i, p := range []fairness.Priority{hi, mid, lo} {
		s.rank[i], _ = o.Rank(p)
	}
	s.log.keep = cfg.Record
	s.workers = make([]*vworker, cfg.Procs)
	s.open = make([][]uint64, s.ranks)
	for r := range s.open {
		s.open[r] = make([]uint64, (cfg.Procs+63)/64)
	}
	for i := range s.workers {
		s.workers[i] = newWorker(s, i)
	}
	s.ticks = make([]int, cfg.Procs)
	s.beats = make([]uint64, cfg.Procs)
	return s, nil
}

func (s *sim) run() (*Result, error) {
	if s.cfg.Sink {
		s.submit(s.rank[Medium], sinkRoot(s.cfg.Procs, s.c), 0)
	}
	s.clock.at(event{t: s.cfg.Lead, kind: evKernel})
	if s.cfg.Rate > 0 {
		s.clock.at(event{t: s.nextArrival(0), kind: evArrive})
	}
	s.clock.at(event{t: s.p.Interrupt, kind: evTick})
	for !s.done {
		e, ok := s.clock.pop()
		if !ok {
			return nil, errors.New("sim: no event left before the kernel ended (a lost thread)")
		}
		if e.t > s.cfg.Lead+s.cfg.Limit {
			return nil, fmt.Errorf("sim: the kernel did not end within %d virtual ms", s.cfg.Limit/1e6)
		}
		switch e.kind {
		case evWorker:
			w := s.workers[e.w]
			if e.gen != w.gen {
				continue // cancelled by a revocation
			}
			w.step(e.t)
		case evArrive:
			s.arrival(e.t)
		case evTick:
			s.tick(e.t)
		case evPoke:
			s.poke(e.t)
		case evDetached:
			if e.gen == e.g.detGen { // else cancelled (cores.go)
				s.reattach(e.g, e.t)
			}
		case evKernel:
			s.kernel = s.submit(s.rank[Low], s.cfg.Kernel.Root, e.t)
			s.log.add(Entry{T: e.t, Kind: evKernel, Worker: -1, Rank: int32(s.kernel.rank), Thread: s.kernel.id})
		}
		if s.log.err != nil {
			return nil, s.log.err
		}
		if afterEvent != nil {
			afterEvent(s, e)
		}
	}
	s.finish()
	return &s.res, nil
}

// submit steers a new root thread of rank r and node n into the workers,
// as Runtime.Submit does.
func (s *sim) submit(r int, n Node, now int64) *vtask {
	t := s.newTask(r, 0, n)
	t.arrived = now
	s.steer(item{t: t}, now)
	return t
}

func (s *sim) newTask(r int, depth int32, n Node) *vtask {
	s.nextID++
	return &vtask{id: s.nextID, rank: r, depth: depth, node: n}
}

// nextArrival draws the time of the next interactive arrival after now.
func (s *sim) nextArrival(now int64) int64 {
	return now + max(1, int64(s.arrive.ExpFloat64()/s.cfg.Rate*1e9))
}

func (s *sim) arrival(now int64) {
	t := s.newTask(s.rank[High], 0, echoNode(s.cfg.EchoWork))
	t.arrived, t.interactive = now, true
	t.index = len(s.res.Arrivals)
	s.res.Arrivals = append(s.res.Arrivals, now)
	s.res.Responses = append(s.res.Responses, -1)
	s.res.Waits = append(s.res.Waits, -1)
	w := s.takeOver(item{t: t}, now)
	if w < 0 {
		w = s.steer(item{t: t}, now)
	}
	s.log.add(Entry{T: now, Kind: evArrive, Worker: int32(w), Rank: int32(t.rank), Thread: t.id})
	s.clock.at(event{t: s.nextArrival(now), kind: evArrive})
}

// takeOver gives an interactive thread a worker at once, as the runtime
// does for the echo, a thread resumed on its running goroutine after its
// read (Runtime.takeOver, internal/engine/revoke.go): a sleeping worker, or
// by revocation one that runs a lower rank and would switch to the
// thread's at its next point (policy.Seizes), or that passed no point for
// StaleAfter. It returns the worker's index, or -1 if none qualifies.
func (s *sim) takeOver(it item, now int64) int {
	n := len(s.workers)
	start := s.steers
	s.steers++
	for i := range n {
		if w := s.workers[(start+1+i)%n]; w.asleep {
			w.inbox = append(w.inbox, it)
			w.attn = true
			w.resume(now, now+s.c.Arrive) // the arriving goroutine runs already: no wake-up
			return w.id
		}
	}
	r := it.t.rank
	lends := !s.p.NoBorrow && s.crit.ShareByRank(r) > 0
	start = s.steers
	s.steers++
	for i := range n {
		w := s.workers[(start+1+i)%n]
		stale := now-w.lastService >= s.p.StaleAfter
		if !stale && !policy.Seizes(r, w.cur, w.primary, lends) {
			continue
		}
		if s.revoke(w, r, true, !stale, s.c.Arrive, now) {
			w.inbox = append(w.inbox, it)
			return w.id
		}
	}
	return -1
}

// steer gives a thread from outside the workers to the one that can run it
// soonest (Runtime.steer), revoking that worker's token when every
// candidate is stale; it returns the worker's index.
func (s *sim) steer(it item, now int64) int {
	s.steers++
	i, bestScore := policy.Steer(len(s.workers), s.steers, func(v int) int {
		w := s.workers[v]
		return policy.SteerScore(it.t.rank, w.cur, w.primary, w.asleep, now-w.lastService >= s.p.StaleAfter)
	})
	best := s.workers[i]
	best.give(it, now)
	if policy.SteerRevokes(bestScore) {
		s.revoke(best, it.t.rank, true, false, s.c.Handoff, now)
	}
	return best.id
}

// tick is the ticker and the watchdog (internal/engine/ticker.go): raise
// every busy worker's attention; revoke the token of a worker that passed
// no preemption point for policy.StallTicks ticks when somebody waits for
// it, or for a whole round.
func (s *sim) tick(now int64) {
	// Revocations wake no worker, so idle and busy hold for the whole tick.
	idle, busy := s.sleeping()
	roundTicks := policy.RoundTicks(s.p.Quantum, s.p.Interrupt)
	revoked := int32(-1)
	for i, w := range s.workers {
		if v, below := s.look(i, idle, now, roundTicks); v != policy.Wait {
			if s.revoke(w, below, v == policy.RevokeBusy, false, s.c.Handoff, now) {
				revoked = int32(i)
			}
		}
	}
	s.log.add(Entry{T: now, Kind: evTick, Worker: revoked, Rank: -1})
	s.clock.at(event{t: now + s.p.Interrupt, kind: evTick})
	s.schedulePoke(now, idle, busy)
}

// look is the watchdog's look at worker i at a tick at now (watch.look):
// raise its attention, count its ticks without a beat, and decide about a
// stall and the rank to revoke below. idle says some worker sleeps.
func (s *sim) look(i int, idle bool, now int64, roundTicks int) (policy.Verdict, int) {
	w := s.workers[i]
	if w.asleep {
		s.ticks[i] = 0
		return policy.Wait, 0
	}
	w.attn = true
	if w.beat != s.beats[i] || w.g == nil {
		s.beats[i], s.ticks[i] = w.beat, 0
		return policy.Wait, 0
	}
	s.ticks[i]++
	demand := idle || len(w.inbox) > 0 || w.mailFlag || w.requests.Pending() || w.highest() >= 0 || w.g.lazyLive() ||
		now >= w.nextRound
	// RevokeBlocked: nobody waits, but a round went by; it is blocked, most
	// likely, and costs no processor detached.
	v := policy.Watchdog(s.ticks[i], roundTicks, demand)
	if v == policy.Wait {
		return v, 0
	}
	return v, policy.WatchdogBelow(w.waitingTop(), w.cur)
}

// sleeping reports whether some worker sleeps and whether some does not
// (Runtime.sleeping).
func (s *sim) sleeping() (some, notAll bool) {
	for _, w := range s.workers {
		some, notAll = some || w.asleep, notAll || !w.asleep
	}
	return some, notAll
}

// schedulePoke plans the next poke after now, if policy.Poke holds for
// idle and busy (from sleeping) and it falls before the next tick
// (ticker.run's second ticker).
func (s *sim) schedulePoke(now int64, idle, busy bool) {
	next := now + s.p.DealInterval
	if policy.Poke(idle, busy) && next < policy.RoundEnd(now, s.p.Interrupt) {
		s.clock.at(event{t: next, kind: evPoke})
	}
}

// poke raises the attention of every worker that computes, as pokeBusy.
func (s *sim) poke(now int64) {
	idle, busy := s.sleeping()
	if !policy.Poke(idle, busy) {
		return
	}
	for _, w := range s.workers {
		if !w.asleep {
			w.attn = true
		}
	}
	s.log.add(Entry{T: now, Kind: evPoke, Worker: -1, Rank: -1})
	s.schedulePoke(now, idle, busy) // raising attention wakes nobody
}

// finish sums up the run.
func (s *sim) finish() {
	end := s.kernel.finished
	s.res.Time = end - s.cfg.Lead
	var busy int64
	for _, w := range s.workers {
		w.charge(end)
		for i, r := range s.rank {
			s.res.CPU[i] += w.cpu[r]
			busy += w.cpu[r]
		}
		st := &w.stats
		s.res.Rounds += st.rounds
		s.res.Deals += st.deals
		s.res.Requests += st.requests
		s.res.Donations += st.donations
		s.res.Preemptions += st.preemptions
		s.res.Promotions += st.promotions
		s.res.Rescues += st.rescues
		s.res.Seizures += st.seizures
	}
	for _, d := range s.res.Detached {
		busy += d // on the workers' cores
	}
	s.res.Idle = max(0, 1-float64(busy)/float64(end*int64(len(s.workers)))) // over the whole run, lead included
	var rs, as, ws []int64
	for i, r := range s.res.Responses {
		if r < 0 {
			s.res.Pending = append(s.res.Pending, s.res.Arrivals[i])
			continue
		}
		rs, as, ws = append(rs, r), append(as, s.res.Arrivals[i]), append(ws, s.res.Waits[i])
	}
	s.res.Responses, s.res.Arrivals, s.res.Waits = rs, as, ws
	s.res.Events = s.log.n
	s.res.Digest = s.log.digest
	s.res.Log = s.log.entries
}
