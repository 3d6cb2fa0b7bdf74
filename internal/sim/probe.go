package sim

import (
	"fmt"

	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// Probe drives the simulator's workers one pass through the scheduler at
// a time, from a state its caller sets, at no cost of time: the workers of
// a simulation with zero Costs and no event loop. internal/engine's
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
	// NextRound is when its round ends (0 keeps the one NewProbe began).
	NextRound, NextDeal, NextAsk, SpreadTo int64
	Woke, Asked                            bool
}

// Observation is what a worker holds after a pass: every field that a
// pass writes and that later decisions read.
type Observation struct {
	Primary                                            int
	Top                                                int
	NextRound, NextDeal, NextAsk, SpreadTo, RoundStart int64
	Asked, Woke, Attn, MailFlag                        bool
	Used, Borrowed                                     []int64
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
	if st.NextRound != 0 {
		v.nextRound = st.NextRound
	}
	v.nextDeal, v.nextAsk, v.spreadTo = st.NextDeal, st.NextAsk, st.SpreadTo
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

// Observe gives worker w's state at the end of a scenario: it takes the
// threads out of the worker's banks and the request out of its cell.
func (p *Probe) Observe(w int) Observation {
	v := p.s.workers[w]
	o := Observation{
		Primary: v.primary, Top: v.top, NextRound: v.nextRound, NextDeal: v.nextDeal, NextAsk: v.nextAsk,
		SpreadTo: v.spreadTo, RoundStart: v.roundStart, Asked: v.asked, Woke: v.woke, Attn: v.attn, MailFlag: v.mailFlag,
		Used: append([]int64(nil), v.used...), Borrowed: append([]int64(nil), v.borrowed...),
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
