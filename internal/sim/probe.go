package sim

import (
	"fmt"

	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// Probe drives the simulator's workers one step at a time (a pass through
// the scheduler, a choice, going to sleep, a wake-up, a steered thread, the
// watchdog's look), from a state its caller sets, at no cost of time: the
// workers of a simulation with zero Costs and no event loop. internal/engine's
// differential test (simdiff_test.go) sets the same state on the engine's
// workers and the simulator's, runs the same pass on both and compares
// what they did, so that the re-statement of sched.go in worker.go cannot
// drift from it unnoticed.
//
// Ranks are those of a three-priority chain: Low is rank 0, Medium 1,
// High 2.
type Probe struct{ s *sim }

// ProbeState is the part of a worker's state that a pass through the
// scheduler reads besides its banks, inbox, mailboxes and request cell.
type ProbeState struct {
	Cur      int     // rank it runs (policy.NoRank: none)
	Since    int64   // when Cur started being accounted
	Used     []int64 // by rank: recent processor time (policy.Decay)
	Borrowed []int64 // by rank: time run this round above the primary rank
	Total    int64   // recent time of the worker, run or not (policy.MayBorrow)
	// NextRound is when its round ends (0 keeps the one NewProbe began).
	NextRound, NextDeal, NextAsk, SpreadTo int64
	// LastService is when it last passed through the scheduler.
	LastService int64
	Woke, Asked bool
}

// Observation is what a worker holds after a pass: every field that a
// pass writes and that later decisions read.
type Observation struct {
	Primary, Top, Cur                                  int
	Asleep                                             bool
	Beat                                               uint64
	NextRound, NextDeal, NextAsk, SpreadTo, RoundStart int64
	Asked, Woke, Attn, MailFlag                        bool
	Used, Borrowed                                     []int64
	Total                                              int64
	Banks                                              [][]int // by rank: the depths of its entries, oldest first
	Mail                                               []mailbox.State
	Open                                               []bool // by rank: opened by the worker and not closed since
	Indexed                                            []bool // by rank: its bit in the index of open mailboxes
	Request                                            string // the request cell's content, "" if empty
}

// NewProbe makes the probe's procs workers under the three-priority
// criterion crit (weights of High, Medium, Low) with params p (zero:
// DefaultParams) and seed, each having begun its round at time 0.
func NewProbe(procs int, crit [3]float64, p Params, seed uint64) (*Probe, error) {
	if p == (Params{}) {
		p = DefaultParams()
	}
	s, err := newSim(Config{Procs: procs, Criterion: crit, Kernel: &Kernel{}, Seed: seed, Params: p, Costs: Costs{Spawn: 1}})
	if err != nil {
		return nil, err
	}
	s.c = Costs{}
	return &Probe{s: s}, nil
}

// Push puts a new thread of rank r and fork depth depth into worker w's
// bank, as a fork promoted there would be; a stale one was claimed
// meanwhile (a joiner ran it inline), so that the bank's entry is stale.
func (p *Probe) Push(w, r int, depth int32, stale bool) {
	t := p.task(r, depth)
	if stale {
		t.claim()
	}
	p.s.workers[w].insert(item{t: t})
}

// Give puts a new thread of rank r and fork depth depth into worker w's
// inbox, as a submission steered there would be (without waking it).
func (p *Probe) Give(w, r int, depth int32) {
	v := p.s.workers[w]
	v.inbox = append(v.inbox, item{t: p.task(r, depth)})
	v.attn = true
}

func (p *Probe) task(r int, depth int32) *vtask {
	p.s.nextID++
	return &vtask{id: p.s.nextID, rank: r, depth: depth, state: stNew}
}

// OpenMail opens worker w's mailbox r, as a worker wanting work of rank r
// does.
func (p *Probe) OpenMail(w, r int) { p.s.workers[w].open(r) }

// Post posts in worker w's request cell a request of worker from for rank
// r (anything: any rank), as ask does.
func (p *Probe) Post(w, from, r int, anything bool) bool {
	return p.s.workers[w].requests.Post(from, policy.Request(r, anything))
}

// Set sets worker w's state.
func (p *Probe) Set(w int, st ProbeState) {
	v := p.s.workers[w]
	v.cur, v.since = st.Cur, st.Since
	copy(v.used, st.Used)
	copy(v.borrowed, st.Borrowed)
	v.total = st.Total
	if st.NextRound != 0 {
		v.nextRound = st.NextRound
	}
	v.nextDeal, v.nextAsk, v.spreadTo = st.NextDeal, st.NextAsk, st.SpreadTo
	v.lastService = st.LastService
	v.woke, v.asked = st.Woke, st.Asked
}

// Service makes worker w pass through the scheduler's duties at now
// (worker.service).
func (p *Probe) Service(w int, now int64) {
	v := p.s.workers[w]
	v.t = now
	v.service()
}

// Choose is worker w's choice of the rank to run at now, cur running
// (worker.choose); it opens and asks as choose does.
func (p *Probe) Choose(w, cur int, now int64) int {
	v := p.s.workers[w]
	v.t = now
	return v.choose(cur)
}

// Next removes the thread worker w runs next at now (worker.next) and
// gives its rank and fork depth; ok is false if it has none.
func (p *Probe) Next(w int, now int64) (rank int, depth int32, ok bool) {
	v := p.s.workers[w]
	v.t = now
	it, ok := v.next()
	if !ok {
		return policy.NoRank, 0, false
	}
	return it.t.rank, it.t.depth, true
}

// Idle makes worker w go idle at now, as it does when Next finds nothing
// (worker.idle): it opens its mailboxes, asks for anything and sleeps
// until a deal or a thread given to it wakes it.
func (p *Probe) Idle(w int, now int64) {
	v := p.s.workers[w]
	v.t = now
	v.idle()
}

// Wake wakes worker w at now if it sleeps (worker.wake, and the sleeper's
// side of it, worker.awake).
func (p *Probe) Wake(w int, now int64) { p.s.workers[w].wake(now) }

// Asleep reports whether worker w sleeps.
func (p *Probe) Asleep(w int) bool { return p.s.workers[w].asleep }

// Steer steers a new thread of rank r and fork depth depth from outside at
// now (Runtime.steer) and gives the worker it went to.
func (p *Probe) Steer(r int, depth int32, now int64) int {
	return p.s.steer(item{t: p.task(r, depth)}, now)
}

// Hold makes worker w run a thread's code, as the watchdog sees it: a
// goroutine holds its token, in the middle of a segment, with no lazy fork.
// It looks for the highest rank queued first, as the engine's goroutine
// does as it leaves for thread code (gor.userMode), which updates the
// worker's top.
func (p *Probe) Hold(w int) {
	v := p.s.workers[w]
	v.highest()
	v.g = &vgor{inSegment: true}
}

// Watch sets what the watchdog remembers of worker w: ticks ticks without
// a pass through the scheduler, and whether the worker passed since
// (moved).
func (p *Probe) Watch(w, ticks int, moved bool) {
	p.s.ticks[w], p.s.beats[w] = ticks, p.s.workers[w].beat
	if moved {
		p.s.beats[w]--
	}
}

// Look is the watchdog's look at worker w at a tick at now (watch.look):
// its verdict, the rank it would revoke below, and its count of ticks
// afterwards. The simulator has no OS threads to ask, so its own look
// decides as the engine's does where the OS tells nothing; known and
// computing are what the engine's probe of the stuck thread found (the
// thread's processor time and state, watch.computing), and Look corrects
// the verdict with them as the engine does (policy.Measured).
func (p *Probe) Look(w int, now int64, known, computing bool) (v policy.Verdict, below, ticks int) {
	idle, _ := p.s.sleeping()
	v, below = p.s.look(w, idle, now, policy.RoundTicks(p.s.p.Quantum, p.s.p.Interrupt))
	return policy.Measured(v, known, computing), below, p.s.ticks[w]
}

// Observe gives worker w's state at the end of a scenario: it takes the
// threads out of the worker's banks and the request out of its cell.
func (p *Probe) Observe(w int) Observation {
	v := p.s.workers[w]
	o := Observation{
		Primary: v.primary, Top: v.top, Cur: v.cur, Asleep: v.asleep, Beat: v.beat, NextRound: v.nextRound, NextDeal: v.nextDeal, NextAsk: v.nextAsk,
		SpreadTo: v.spreadTo, RoundStart: v.roundStart, Asked: v.asked, Woke: v.woke, Attn: v.attn, MailFlag: v.mailFlag,
		Used: append([]int64(nil), v.used...), Borrowed: append([]int64(nil), v.borrowed...), Total: v.total,
		Open: append([]bool(nil), v.mopen...),
	}
	for r := range v.banks {
		o.Banks = append(o.Banks, Depths(&v.banks[r]))
		o.Mail = append(o.Mail, v.mail[r].State())
		o.Indexed = append(o.Indexed, p.s.open[r][w/64]&(1<<uint(w%64)) != 0)
	}
	o.Request = TakeRequest(&v.requests)
	return o
}

// Depths takes the threads out of bank b and gives their fork depths,
// oldest first, as Observation.Banks holds them.
func Depths[T any](b *bank.Bank[T]) []int {
	var ds []int
	for _, e := range b.Clear(nil) {
		ds = append(ds, e.Depth)
	}
	return ds
}

// TakeRequest takes the request out of cell c and describes it, as
// Observation.Request holds it ("" if the cell is empty).
func TakeRequest(c *mailbox.RequestCell) string {
	id, req, ok := c.Take()
	if !ok {
		return ""
	}
	r, anything := policy.RequestedRank(req)
	return fmt.Sprintf("from %d for rank %d (anything: %v)", id, r, anything)
}
