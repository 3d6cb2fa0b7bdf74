package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/internal/sim"
)

// The simulator (internal/sim/worker.go) re-states this package's
// scheduling loop on virtual workers. These tests set the same state on
// this package's workers and on the simulator's (sim.Probe), run the same
// pass through the scheduler on both and compare everything the pass
// wrote: the primary rank, the banks' threads and depths, the mailboxes,
// the index of open mailboxes, the request cells, the deal, ask and spread
// times, the attention word and the usage records. A change of one loop
// that the other does not follow fails here.

// diffCriteria are the criteria the scenarios draw from: High, Medium,
// Low weights, as fairbench writes them.
var diffCriteria = [][3]float64{{50, 25, 25}, {50, 0, 50}, {100, 0, 0}, {5, 45, 50}, {0, 0, 100}, {34, 33, 33}}

// diffRuntime is a runtime of procs workers over the simulator's three
// priorities (Low < Medium < High) with its default parameters, whose
// workers nobody runs: the test drives them as the simulator's probe
// drives its own.
func diffRuntime(t *testing.T, procs int, weights [3]float64, seed uint64) *Runtime {
	t.Helper()
	o := fairness.NewOrder()
	hi, mid, lo := o.New("interactive"), o.New("sink"), o.New("kernel")
	require.NoError(t, o.Less(lo, mid))
	require.NoError(t, o.Less(mid, hi))
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: weights[sim.High], mid: weights[sim.Medium], lo: weights[sim.Low]})
	require.NoError(t, err)
	p := sim.DefaultParams()
	rt := &Runtime{
		settings: settings{
			order: o, ranks: o.Freeze(),
			quantum: time.Duration(p.Quantum), dealEvery: time.Duration(p.DealInterval), interrupt: time.Duration(p.Interrupt),
			budget: time.Duration(p.Budget), borrow: !p.NoBorrow, seed: seed, epoch: time.Now(),
		},
	}
	rt.crit.Store(c)
	rt.open = newOpenIndex(len(rt.ranks), procs)
	rt.workers = make([]*worker, procs)
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt, i, seed+uint64(i))
	}
	return rt
}

// observe is sim.Probe.Observe for worker w of rt.
func observe(rt *Runtime, w *worker) sim.Observation {
	o := sim.Observation{
		Primary: w.primary, Top: w.top, NextRound: w.nextRound, NextDeal: w.nextDeal, NextAsk: w.nextAsk,
		SpreadTo: w.spreadTo, RoundStart: w.roundStart, Asked: w.asked, Woke: w.woke,
		Attn: w.attn.Load() != 0, MailFlag: w.mailFlag.Load() != 0,
		Used: append([]int64(nil), w.used...), Borrowed: append([]int64(nil), w.borrowed...),
		Open: append([]bool(nil), w.mopen...),
	}
	for r := range w.banks {
		o.Banks = append(o.Banks, sim.Depths(&w.banks[r]))
		o.Mail = append(o.Mail, w.mail[r].State())
		o.Indexed = append(o.Indexed, rt.open[r][w.id/64].Load()&(1<<uint(w.id%64)) != 0)
	}
	o.Request = sim.TakeRequest(&w.requests)
	return o
}

// pair is one scenario's engine and simulator, set up alike.
type pair struct {
	rt *Runtime
	p  *sim.Probe
}

func (b pair) push(w, r int, depth int32, stale bool) {
	t := &Task{rank: int32(r), depth: depth}
	if stale {
		t.claim()
	}
	b.rt.workers[w].insert(item{t: t})
	b.p.Push(w, r, depth, stale)
}

func (b pair) give(w, r int, depth int32) {
	t := &Task{rank: int32(r), depth: depth}
	b.rt.workers[w].inbox.push(item{t: t})
	b.rt.workers[w].attn.Store(1)
	b.p.Give(w, r, depth)
}

func (b pair) openMail(w, r int) {
	b.rt.workers[w].open(r)
	b.p.OpenMail(w, r)
}

func (b pair) post(w, from, r int, anything bool) {
	b.rt.workers[w].requests.Post(from, policy.Request(r, anything))
	b.p.Post(w, from, r, anything)
}

func (b pair) set(w int, st sim.ProbeState) {
	x := b.rt.workers[w]
	x.cur, x.since = st.Cur, st.Since
	x.running.Store(int32(st.Cur))
	copy(x.used, st.Used)
	copy(x.borrowed, st.Borrowed)
	if st.NextRound != 0 {
		x.nextRound = st.NextRound
	}
	x.nextDeal, x.nextAsk, x.spreadTo = st.NextDeal, st.NextAsk, st.SpreadTo
	x.woke, x.asked = st.Woke, st.Asked
	b.p.Set(w, st)
}

// scenario sets a random state on both: threads in banks (a fifth of them
// stale: claimed by a joiner) and inboxes,
// open mailboxes, requests, and each worker's running rank, usage and
// times, around now.
func scenario(t *testing.T, rng *rand.Rand, procs int) (pair, int64) {
	t.Helper()
	weights := diffCriteria[rng.IntN(len(diffCriteria))]
	seed := rng.Uint64()
	p, err := sim.NewProbe(procs, weights, sim.Params{}, seed)
	require.NoError(t, err)
	b := pair{rt: diffRuntime(t, procs, weights, seed), p: p}
	q := int64(b.rt.quantum)
	now := 1 + rng.Int64N(3*q)
	around := func(d int64) int64 { return max(0, now-d+rng.Int64N(2*d)) }
	for w := range procs {
		for r := range 3 {
			for range rng.IntN(4) {
				b.push(w, r, int32(rng.IntN(6)), rng.IntN(5) == 0)
			}
			if rng.IntN(3) == 0 {
				b.openMail(w, r)
			}
		}
		for range rng.IntN(3) {
			b.give(w, rng.IntN(3), int32(rng.IntN(6)))
		}
		if procs > 1 && rng.IntN(2) == 0 {
			b.post(w, (w+1+rng.IntN(procs-1))%procs, rng.IntN(3), rng.IntN(2) == 0)
		}
		st := sim.ProbeState{
			Cur: rng.IntN(4) - 1, Since: max(0, now-rng.Int64N(q)),
			NextDeal: around(int64(b.rt.dealEvery)), NextAsk: around(int64(b.rt.dealEvery)),
			SpreadTo: around(int64(b.rt.dealEvery)), Woke: rng.IntN(2) == 0, Asked: rng.IntN(4) == 0,
		}
		if rng.IntN(2) == 0 {
			st.NextRound = around(q) // a round switch in about half the scenarios
		}
		for range 3 {
			st.Used = append(st.Used, rng.Int64N(2*policy.UsageWindow(q)))
			st.Borrowed = append(st.Borrowed, rng.Int64N(q))
		}
		b.set(w, st)
	}
	return b, now
}

// same fails unless both sides' workers hold the same state.
func (b pair) same(t *testing.T, what string) {
	t.Helper()
	for w, x := range b.rt.workers {
		require.Equal(t, b.p.Observe(w), observe(b.rt, x), "%s: worker %d: simulator (expected) against engine (actual)", what, w)
	}
}

// scenarios runs step on 3000 random scenarios of one or two workers,
// drawn from the stream of random numbers stream, with the worker w the
// step drives and the time now.
func scenarios(t *testing.T, stream uint64, step func(i int, b pair, rng *rand.Rand, w int, now int64)) {
	for i := range 3000 {
		rng := rand.New(rand.NewPCG(uint64(i), stream))
		procs := 1 + rng.IntN(2)
		b, now := scenario(t, rng, procs)
		step(i, b, rng, rng.IntN(procs), now)
	}
}

// A pass through the scheduler's duties (service: round, deal or request,
// inbox, mailboxes, spreading) leaves the engine's workers and the
// simulator's in the same state. With two workers every victim is the
// other one, so the random draws, which the two take from different
// generators, do not matter.
func TestSimulatorServiceAsEngine(t *testing.T) {
	scenarios(t, 0xd1ff, func(i int, b pair, rng *rand.Rand, w int, now int64) {
		b.rt.workers[w].service(now)
		b.p.Service(w, now)
		if len(b.rt.workers) > 1 && rng.IntN(2) == 0 { // the other worker's pass sees what the first did
			b.rt.workers[1-w].service(now + 1)
			b.p.Service(1-w, now+1)
		}
		b.same(t, fmt.Sprintf("scenario %d, service of worker %d at %d", i, w, now))
	})
}

// The choice of the rank to run (choose: primary, donation, borrowing,
// the request for the primary rank) is the same on both.
func TestSimulatorChooseAsEngine(t *testing.T) {
	scenarios(t, 0xc400, func(i int, b pair, _ *rand.Rand, w int, now int64) {
		cur := b.rt.workers[w].cur
		want := b.p.Choose(w, cur, now)
		got := b.rt.workers[w].choose(cur, now)
		require.Equal(t, want, got, "scenario %d: the rank chosen, simulator (expected) against engine (actual)", i)
		b.same(t, fmt.Sprintf("scenario %d, choose of worker %d at %d", i, w, now))
	})
}
