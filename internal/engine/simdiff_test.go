package engine

import (
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/internal/sim"
)

// The simulator (internal/sim/worker.go, sim.go) re-states this package's
// scheduling loop, steering and watchdog on virtual workers. These tests
// set the same state on this package's workers and on the simulator's
// (sim.Probe), run the same step on both (a pass through the scheduler,
// choose, next, going to sleep and being woken, steering, the watchdog's
// look at a worker) and compare its decision and everything it wrote: the
// primary and running ranks, the banks' threads and depths, the mailboxes,
// the index of open mailboxes, the request cells, the deal, ask and spread
// times, the attention word, the sleeping state, the beat and the usage
// records. A change of one side that the other does not follow fails here.
// The engine reads its clock where a worker goes idle (windDown charges the
// rank it ran until then): the scenarios set the engine's time 0 so that
// its clock reads about the scenario's time, and the simulator's worker goes
// idle at the time the engine's charged at. The watchdog's probe of the
// stuck thread's OS thread reads a real thread (holderThread), which the
// simulator, having no OS threads, takes as given (sim.Probe.Look).

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
		Primary: w.primary, Top: w.top, Cur: w.cur, Asleep: w.sleeper.Load() != nil, Beat: w.beat.Load(), NextRound: w.nextRound, NextDeal: w.nextDeal, NextAsk: w.nextAsk,
		SpreadTo: w.spreadTo, RoundStart: w.roundStart, Asked: w.asked, Woke: w.woke,
		Attn: w.attn.Load() != 0, MailFlag: w.mailFlag.Load() != 0,
		Used: append([]int64(nil), w.used...), Borrowed: append([]int64(nil), w.borrowed...), Total: w.total,
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

// pair is one scenario's engine and simulator, set up alike. A worker
// that sleeps in the engine does so on a goroutine of its own, as in the
// runtime: sleepers[w] is that goroutine's record, woken[w] closed when it
// has woken (nil: worker w does not sleep).
type pair struct {
	rt       *Runtime
	p        *sim.Probe
	sleepers []*gor
	woken    []chan struct{}
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
	x.total = st.Total
	x.sinceTid = 0 // no processor clock: the engine charges wall time, as the simulator does
	if st.NextRound != 0 {
		x.nextRound = st.NextRound
		x.roundEnd.Store(st.NextRound)
	}
	x.nextDeal, x.nextAsk, x.spreadTo = st.NextDeal, st.NextAsk, st.SpreadTo
	x.lastService.Store(st.LastService)
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
	b := pair{rt: diffRuntime(t, procs, weights, seed), p: p, sleepers: make([]*gor, procs), woken: make([]chan struct{}, procs)}
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
			LastService: max(0, now-rng.Int64N(2*int64(policy.StaleAfter))),
		}
		if rng.IntN(4) == 0 {
			st.LastService = max(0, now-int64(policy.StaleAfter)) // stale from now exactly
		}
		if rng.IntN(2) == 0 {
			st.NextRound = around(q) // a round switch in about half the scenarios
		}
		for range 3 {
			st.Used = append(st.Used, rng.Int64N(2*policy.UsageWindow(q)))
			st.Borrowed = append(st.Borrowed, rng.Int64N(q))
		}
		st.Total = policy.UsageWindow(q)/2 + rng.Int64N(policy.UsageWindow(q))
		b.set(w, st)
	}
	b.rt.epoch = time.Now().Add(-time.Duration(now)) // the engine's clock reads now, and a little later
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

// drain takes the threads worker w runs next at now from both, one by one
// until it has none, and fails unless both give the same ranks and depths.
func (b pair) drain(t *testing.T, w int, now int64, what string) {
	t.Helper()
	for {
		r, d, ok := b.p.Next(w, now)
		it, depth, got := b.rt.workers[w].next(now)
		require.Equal(t, ok, got, "%s: a thread to run, simulator (expected) against engine (actual)", what)
		if !ok {
			return
		}
		require.Equal(t, [2]int{r, int(d)}, [2]int{int(it.t.rank), depth}, "%s: rank and depth of the next thread", what)
	}
}

// sleep makes worker w go to sleep on both at now, as its loop does: a
// pass through the scheduler, the threads it holds run (drain), then idle
// finds nothing. The engine's worker sleeps on a goroutine of its own,
// which the runtime's wakers wake. If the worker still counts a rank as
// running (the thread it ran ended), going idle charges that rank up to
// the engine's clock, a little after now; sleep returns that time (now if
// nothing ran), at which the simulator's worker goes idle too, and which
// the scenario's later steps follow.
func (b pair) sleep(t *testing.T, w int, now int64, what string) int64 {
	t.Helper()
	x := b.rt.workers[w]
	x.service(now)
	b.p.Service(w, now)
	b.drain(t, w, now, what)
	x.sinceTid = 0 // service's charge read this OS thread's clock; idle's must charge wall time, as set
	g, woken := b.rt.record(), make(chan struct{})
	b.sleepers[w], b.woken[w] = g, woken
	go func() {
		defer close(woken)
		x.idle(g)
	}()
wait:
	for x.sleeper.Load() != g { // it published itself: idle's charge, asking and opening are done
		select {
		case <-woken:
			break wait // it found work at once; wake sees whether the simulator's did
		default:
			goruntime.Gosched()
		}
	}
	at := max(now, x.since) // windDown's charge wrote since before the sleeper was published
	b.p.Idle(w, at)
	return at
}

// wake ends every sleep of the engine's workers: one that the simulator's
// worker woke from must have ended already, or end soon, and one that
// still goes on in both is ended by a wake-up at now on both.
func (b pair) wake(t *testing.T, now int64, what string) {
	t.Helper()
	for w, woken := range b.woken {
		if woken == nil {
			continue
		}
		x := b.rt.workers[w]
		if b.p.Asleep(w) {
			require.True(t, x.sleeper.Load() == b.sleepers[w], "%s: worker %d sleeps in the simulator, not in the engine", what, w)
			b.p.Wake(w, now)
			x.wake()
		}
		select {
		case <-woken:
		case <-time.After(time.Minute): // a lost wake-up, not a slow one
			t.Fatalf("%s: worker %d woke in the simulator, and in the engine it still sleeps", what, w)
		}
		b.sleepers[w], b.woken[w] = nil, nil
	}
}

// steer steers a new thread of rank r and depth depth from outside at now
// on both and fails unless both chose the same worker.
func (b pair) steer(t *testing.T, r int, depth int32, now int64, what string) {
	t.Helper()
	before := make([]int32, len(b.rt.workers))
	for w, x := range b.rt.workers {
		before[w] = x.inbox.n.Load()
	}
	want := b.p.Steer(r, depth, now)
	b.rt.steerAt(item{t: &Task{rank: int32(r), depth: depth}}, now)
	got := -1
	for w, x := range b.rt.workers {
		if x.inbox.n.Load() != before[w] {
			got = w
		}
	}
	require.Equal(t, want, got, "%s: the worker a thread of rank %d was steered to, simulator (expected) against engine (actual)", what, r)
}

// A worker that finds nothing goes to sleep (idle: its mailboxes open, a
// request for anything to another worker) and is woken by what the other
// worker's pass deals it or by a thread steered to it, seen from the
// sleeping side: whether it wakes, and its state once it has and passed
// through the scheduler again, are the same on both. next is compared
// thread by thread as the sleeping worker empties its banks.
// A worker that still counts the rank of the thread it ran goes idle
// charging that rank, in about three scenarios of four.
func TestSimulatorIdleAsEngine(t *testing.T) {
	charged := 0
	scenarios(t, 0x1d1e, func(i int, b pair, rng *rand.Rand, w int, now int64) {
		what := fmt.Sprintf("scenario %d, idle of worker %d at %d", i, w, now)
		if b.rt.workers[w].cur != policy.NoRank {
			charged++
		}
		now = b.sleep(t, w, now, what)
		if v := 1 - w; len(b.rt.workers) > 1 && rng.IntN(2) == 0 {
			b.rt.workers[v].service(now + 1)
			b.p.Service(v, now+1)
		}
		if rng.IntN(3) == 0 {
			b.steer(t, rng.IntN(3), int32(rng.IntN(6)), now+2, what)
		}
		b.wake(t, now+3, what)
		b.rt.workers[w].service(now + 4)
		b.p.Service(w, now+4)
		b.same(t, what)
	})
	require.Greater(t, charged, 1000, "scenarios in which going idle charged a running rank")
}

// next empties a worker's banks in the same order on both.
func TestSimulatorNextAsEngine(t *testing.T) {
	scenarios(t, 0x4e87, func(i int, b pair, _ *rand.Rand, w int, now int64) {
		what := fmt.Sprintf("scenario %d, next of worker %d at %d", i, w, now)
		b.drain(t, w, now, what)
		b.same(t, what)
	})
}

// Threads from outside (steer) go to the same worker on both, sleeping
// workers, stale ones and the rotation of ties included.
func TestSimulatorSteerAsEngine(t *testing.T) {
	scenarios(t, 0x57ee, func(i int, b pair, rng *rand.Rand, w int, now int64) {
		what := fmt.Sprintf("scenario %d, steering at %d", i, now)
		if rng.IntN(2) == 0 {
			now = b.sleep(t, w, now, what)
		}
		for range 1 + rng.IntN(3) {
			b.steer(t, rng.IntN(3), int32(rng.IntN(6)), now, what)
		}
		b.wake(t, now+1, what)
		b.same(t, what)
	})
}

// holderThread is an OS thread for the watchdog's probe to read (gor.tid):
// a goroutine locked to it blocks on cmd, so that the thread sleeps in the
// kernel, and on a command computes until its processor clock advanced.
type holderThread struct {
	tid  int32 // 0: this OS gives no thread id, and the probe knows nothing
	cmd  chan struct{}
	done chan struct{}
}

func startHolderThread(t *testing.T) *holderThread {
	h := &holderThread{cmd: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan int32)
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		tid, _ := spanClock()
		ready <- tid
		for range h.cmd {
			for start := threadCPU(tid); threadCPU(tid) <= start; {
			}
			h.done <- struct{}{}
		}
	}()
	h.tid = <-ready
	t.Cleanup(func() { close(h.cmd) })
	return h
}

// parked waits until the thread sleeps in the kernel and gives its
// processor time, which stays put while it sleeps.
func (h *holderThread) parked(t *testing.T) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a thread that never parks, not a slow one
	for threadRunnable(h.tid) {
		require.True(t, time.Now().Before(deadline), "the holder's OS thread does not sleep")
		goruntime.Gosched()
	}
	return threadCPU(h.tid)
}

// What the watchdog's probe finds of the stuck thread's OS thread.
const (
	osUnknown   = iota // no thread id, or no processor clock on this OS
	osComputing        // it ran through the whole time since the last sample
	osBlocked          // it slept in the kernel for a round since the last sample
)

// The watchdog's look at a worker whose goroutine runs a thread's code
// (watch.look): its count of ticks without a pass through the scheduler,
// its verdict and the rank it would revoke below, with another worker
// asleep or not, and with what the probe of the holder's OS thread finds
// (unknown, computing, blocked), are the same on both. Every verdict
// occurs; where the OS tells, a computing thread is revoked as busy and a
// blocked one as blocked.
func TestSimulatorWatchdogAsEngine(t *testing.T) {
	ht := startHolderThread(t)
	seen := map[[2]int]int{} // by what the probe found and the verdict
	scenarios(t, 0x3a7c, func(i int, b pair, rng *rand.Rand, w int, now int64) {
		what := fmt.Sprintf("scenario %d, the watchdog's look at worker %d at %d", i, w, now)
		x := b.rt.workers[w]
		if v := 1 - w; len(b.rt.workers) > 1 && rng.IntN(2) == 0 {
			now = b.sleep(t, v, now, what) // then somebody waits for w's spare threads
			if rng.IntN(2) == 0 {          // w takes its request: the sleeper waits all the same
				x.service(now + 1)
				b.p.Service(w, now+1)
			}
		}
		if rng.IntN(2) == 0 { // nothing queued on w
			b.drain(t, w, now+1, what)
		}
		h := b.rt.record()
		h.w = x
		h.mode.Store(h.userMode())
		x.holder.Store(h)
		b.p.Hold(w)
		ticks, moved := rng.IntN(policy.RoundTicks(int64(b.rt.quantum), int64(b.rt.interrupt))+2), rng.IntN(4) == 0
		wt := watch{beat: x.beat.Load(), holder: h, ticks: ticks, cpu: -1}
		if moved {
			wt.beat--
		}
		b.p.Watch(w, ticks, moved)
		if rng.IntN(4) == 0 {
			now = max(now+1, x.nextRound) // at the round's end exactly, if not past it
		} else {
			now += 1 + rng.Int64N(int64(b.rt.quantum)) // past it or not
		}
		os := osUnknown
		if ht.tid != 0 && threadCPU(ht.tid) >= 0 {
			os = rng.IntN(3)
		}
		switch os {
		case osComputing:
			prev := ht.parked(t)
			ht.cmd <- struct{}{}
			<-ht.done
			ran := ht.parked(t) - prev
			h.tid.Store(ht.tid)
			wt.cpu, wt.at = prev, now-ran
		case osBlocked:
			h.tid.Store(ht.tid)
			wt.cpu, wt.at = ht.parked(t), now-int64(b.rt.quantum)
		}
		verdict, below, after := b.p.Look(w, now, os != osUnknown, os == osComputing)
		asleep, _ := b.rt.sleeping()
		_, gotVerdict, gotBelow := wt.look(x, asleep > 0, now, policy.RoundTicks(int64(b.rt.quantum), int64(b.rt.interrupt)))
		require.Equal(t, []int{int(verdict), below, after}, []int{int(gotVerdict), int(gotBelow), wt.ticks}, "%s, the OS's answer %d: verdict, rank below and ticks, simulator (expected) against engine (actual)", what, os)
		seen[[2]int{os, int(verdict)}]++
		b.wake(t, now, what)
		b.same(t, what)
	})
	for _, v := range []policy.Verdict{policy.Wait, policy.RevokeBusy, policy.RevokeBlocked} {
		require.Positive(t, seen[[2]int{osUnknown, int(v)}], "verdict %d with nothing known of the OS thread", v)
	}
	if ht.tid != 0 && threadCPU(ht.tid) >= 0 {
		require.Positive(t, seen[[2]int{osComputing, int(policy.RevokeBusy)}], "a computing thread revoked as busy")
		require.Positive(t, seen[[2]int{osBlocked, int(policy.RevokeBlocked)}], "a blocked thread revoked as blocked")
	}
}

// A stretch in which the worker's OS thread did not run (the OS gave its
// core to another thread; here it sleeps) costs the rank its processor
// time, not its wall time, in the record that borrowing reads, and the
// worker's total the same; Stats still count the wall time.
func TestChargeIsProcessorTime(t *testing.T) {
	if _, cpu := spanClock(); cpu < 0 {
		t.Skip("no per-thread processor clock here")
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	rt := diffRuntime(t, 1, [3]float64{0.5, 0.25, 0.25}, 1)
	w := rt.workers[0]
	w.setRunning(2)
	used, total := w.used[2], w.total
	time.Sleep(20 * time.Millisecond) // a stretch off the core
	w.setRunning(policy.NoRank)
	wall := w.stats.cpu[2].Load()
	require.GreaterOrEqual(t, wall, int64(20*time.Millisecond), "Stats count the wall time")
	require.Less(t, w.used[2]-used, wall/2, "the rank is charged the processor time")
	require.Equal(t, w.used[2]-used, w.total-total, "the total grows by the same charge")
}
