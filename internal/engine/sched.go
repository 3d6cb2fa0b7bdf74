package engine

import (
	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// The scheduling loop of the paper's Figure 2, one per worker. Each pass:
// switch rounds when the quantum is over (drawing a primary priority from
// the criterion), take threads from the inbox and mailboxes, deal spare
// threads when due or asked, then run a thread of the primary priority, or
// else of the highest priority held locally (donation).

// loop runs the scheduling loop for whichever worker g holds, until the
// runtime stops or g becomes surplus. g is in modeSched throughout.
func (g *gor) loop() {
	for {
		w := g.w
		if w == nil {
			return // released while asleep, with enough spares around
		}
		if w.rt.stopping.Load() {
			w.shutdown()
			return
		}
		g.poll()
		it, _, ok := w.next(0)
		if !ok {
			w.idle(g)
			continue
		}
		if it.g != nil {
			// A continuation: its goroutine takes over the token, this one
			// becomes a spare (or exits when there are enough).
			w.setRunning(int(it.t.rank))
			if !w.keepSpare(g) {
				it.g.resume(w)
				g.w = nil
				return
			}
			it.g.resume(w)
			g.park()
			// Handed a token again, perhaps as the sleeper that rest made it:
			// as after idle, only the primary rank is wanted (a no-op for a
			// worker that was busy all along).
			if g.w != nil {
				g.w.closeUnwanted()
			}
			continue
		}
		if !it.t.claim() {
			continue // a joiner ran it inline already
		}
		w.setRunning(int(it.t.rank))
		g.run(it.t)
		if g.pinned {
			// Its OS thread was demoted for good (revoke.go): it ends, and
			// Go ends the thread with it, rather than run other threads.
			g.passTo()
			return
		}
	}
}

// due reports whether the worker should pass through the scheduler now: its
// attention word is raised, or policy.CheckEvery points went by. It is the whole
// cost of a preemption point in the common case: one atomic load, no clock
// read, no write to memory other workers read.
func (g *gor) due() bool {
	if g.w.attn.Load() != 0 {
		return true
	}
	g.count--
	return g.count <= 0
}

// poll does the periodic duties from the loop when they are due.
func (g *gor) poll() {
	if g.due() {
		g.count = g.every // as checkpoint sets it, which counts points by it
		g.w.service(g.w.rt.now())
	}
}

// service does the periodic duties: steps 1–3 of the loop. Deals come before
// taking in what arrived, so that a thread that just arrived by deal or
// steering is considered by this worker's choose before it can be dealt on.
// While the worker spreads (policy.SpreadAfter) it deals at every pass,
// ahead of the deal interval, and raises its own attention word again at
// the end, so that its next preemption point is due too and the heartbeat
// promotes its next lazy fork there. Invariant (spreading): a worker
// spreads only for a deal interval after a deal it sent filled an open
// mailbox, a deal it received, a wake-up with threads in its inbox, or an
// idle worker's request it could not serve, and stops at the first deal
// whose surplus no worker's open mailbox takes; otherwise, as before, a
// random deal at most once a deal interval and points due only when
// another party raised the attention word or policy.CheckEvery points went by.
// The fork path is unchanged: it still reads only the attention word.
func (w *worker) service(now int64) {
	w.attn.Store(0)
	w.asked = false
	w.beat.Add(1)
	w.lastService.Store(now)
	if now >= w.nextRound {
		w.newRound(now)
	}
	var d dealt
	if policy.DealDue(now, w.nextDeal, w.requests.Pending(), policy.Spreading(w.spreadTo, now)) {
		d = w.deal(now)
	}
	got := w.woke && w.inbox.n.Load() != 0
	w.woke = false
	w.drainInbox()
	got = w.receive() || got
	w.spreadTo = policy.SpreadAfter(w.spreadTo, now, int64(w.rt.dealEvery), d.dealt, d.noTaker, got, d.refused)
	if policy.Spreading(w.spreadTo, now) {
		w.attn.Store(1)
	}
	w.offerOS(now)
}

// offerOS offers the OS processor to other threads (sched_yield) if
// policy.OSYieldEvery went by since the last offer.
func (w *worker) offerOS(now int64) {
	if now >= w.nextYield {
		w.nextYield = now + int64(policy.OSYieldEvery)
		w.yieldOS(w.cur)
	}
}

// newRound draws the primary priority for the next quantum, adopting a
// criterion installed by SetCriterion. By default rounds are aligned: every
// worker has the same primary priority at the same time, so a parallel
// computation gets all workers during its rounds instead of pieces of
// them, and its threads do not wait on each other across workers that are
// busy with other priorities. IndependentRounds gives the paper's per-worker
// draws.
func (w *worker) newRound(now int64) {
	if v := w.rt.critVer.Load(); w.sampler == nil || v != w.critVer {
		c := w.rt.crit.Load()
		w.critVer = v
		w.sampler = c.NewSampler(w.rand())
		for r := range w.shares {
			w.shares[r] = c.ShareByRank(r)
			w.used[r] = policy.UsageAtShare(w.shares[r], int64(w.rt.quantum))
		}
		w.total = policy.UsageWindow(int64(w.rt.quantum))
	}
	w.charge(now)
	clear(w.borrowed)
	policy.Decay(w.used, w.roundStart, now, int64(w.rt.quantum))
	w.total = policy.DecayRecord(w.total, w.roundStart, now, int64(w.rt.quantum))
	w.roundStart = now
	for r := range w.banks {
		if r != w.cur {
			w.live(r) // prune threads a joiner ran inline: highest must not count them as work
		}
	}
	if w.rt.independent {
		w.primary = w.sampler.Rank()
		w.nextRound = now + int64(w.rt.quantum)
	} else {
		w.primary = w.rt.alignedPrimary(now)
		w.nextRound = policy.RoundEnd(now, int64(w.rt.quantum))
	}
	w.closeUnwanted()
	w.primPub.Store(int32(w.primary))
	w.roundEnd.Store(w.nextRound)
	w.stats.rounds.Add(1)
	w.stats.primary[w.primary].Add(1)
}

// alignedPrimary is the primary rank of the aligned round that holds time
// now: round k spans [kQ, (k+1)Q) for every worker, and its primary is a
// function of k, so all workers (and the watchdog) agree. The draw walks a
// golden-ratio (Weyl) sequence through the criterion's cumulative shares:
// every window of n rounds gives priority p n·F(p) rounds up to a small
// constant, where independent random draws would stray by about the square
// root of n.
func (rt *Runtime) alignedPrimary(now int64) int {
	return policy.AlignedPrimary(rt.crit.Load(), rt.seed, policy.RoundOf(now, int64(rt.quantum)), len(rt.ranks))
}

// next removes the thread to run now, if the worker has one, with the fork
// depth its bank entry records (a stale entry's task may be changing); now
// is the current time if the caller has it, else 0 (as for choose).
func (w *worker) next(now int64) (item, int, bool) {
	r := w.choose(policy.NoRank, now)
	if r < 0 {
		return item{}, 0, false
	}
	if r != w.primary {
		w.stats.donations.Add(1)
	}
	it, d, _ := w.banks[r].Remove()
	return it, d, true
}

// choose gives the rank the worker should run: cur is the rank of the
// thread it runs now (it counts as work at that rank), policy.NoRank if none; now
// is the current time if the caller has it, else 0. The primary rank when it
// has work, unless a higher rank with a share of its own is ready, used
// less than that share of the worker lately and has prompt budget left in
// the round (policy.MayBorrow); else the highest rank with work (donation).
func (w *worker) choose(cur int, now int64) int {
	p := w.primary
	r, donating := policy.Choose(max(w.highest(), cur), p, cur, w.banks[p].Len(), func(top int) bool {
		return w.shares[top] > 0 && w.rt.borrow && w.mayBorrow(top, now)
	})
	if donating {
		w.open(p)
		if !w.asked { // AsksForPrimary checks it too; here it spares the clock read
			if now == 0 {
				now = w.rt.now()
			}
			if policy.AsksForPrimary(w.asked, now, w.nextAsk) {
				w.nextAsk = now + int64(w.rt.dealEvery)
				w.ask(false)
			}
		}
	}
	if policy.Lends(r, p, donating) {
		w.attn.Store(1) // the next point checks the share and budget (policy.Lends)
	}
	return r
}

// mayBorrow reports whether rank top may borrow the round: it used less
// than its share of the worker lately and its prompt budget of the round
// has time left (policy.MayBorrow).
func (w *worker) mayBorrow(top int, now int64) bool {
	running := w.cur == top
	if running && now == 0 {
		now = w.rt.now()
	}
	return policy.MayBorrow(w.used[top], w.total, w.shares[top], w.borrowed[top], int64(w.rt.budget), running, w.since, now)
}

// highest is the paper's findHighestPrio with the top-priority cell: the
// highest rank whose bank is not empty, or policy.NoRank.
func (w *worker) highest() int {
	for r := w.top; r >= 0; r-- {
		if w.banks[r].Len() > 0 {
			w.top = r
			return r
		}
	}
	w.top = policy.NoRank
	return policy.NoRank
}

// insert puts it into the bank of its priority and refuses further deals at
// that priority (the paper's refuseWork). The caller owns it.t, which no
// other goroutine may run meanwhile: insert reads its depth.
func (w *worker) insert(it item) { w.insertAt(it, int(it.t.depth)) }

// insertAt is insert with the depth the entry records.
func (w *worker) insertAt(it item, depth int) {
	r := int(it.t.rank)
	w.banks[r].Insert(it, depth)
	if r > w.top {
		w.top = r
	}
	if w.mopen[r] {
		w.refuse(r)
	}
}

// refuse closes mailbox r, keeping whatever was delivered into it.
func (w *worker) refuse(r int) {
	w.mopen[r] = false
	w.rt.open.clear(r, w.id)
	w.bankEntries(r, w.mail[r].Close())
}

// closeUnwanted closes every open mailbox but the primary one's
// (policy.Unwanted).
func (w *worker) closeUnwanted() { policy.Unwanted(w.mopen, w.primary, w.refuse) }

// open opens mailbox r for deals, unless it is already open, and marks it
// so in the index of open mailboxes.
func (w *worker) open(r int) {
	if !w.mopen[r] && w.mail[r].Open() {
		w.mopen[r] = true
		w.rt.open.set(r, w.id)
	}
}

func (w *worker) bankEntries(r int, es []bank.Entry[item]) {
	if len(es) == 0 {
		return
	}
	w.stats.dealsReceived.Add(1)
	for _, e := range es {
		w.banks[r].Insert(e.Item, e.Depth)
	}
	if r > w.top {
		w.top = r
	}
}

// receive moves threads dealt to w from its full mailboxes into its banks;
// it reports whether any came.
func (w *worker) receive() bool {
	if w.mailFlag.Load() == 0 {
		return false
	}
	w.mailFlag.Store(0)
	got := false
	for r := range w.mail {
		if es, ok := w.mail[r].Receive(); ok {
			w.mopen[r] = false
			w.rt.open.clear(r, w.id)
			w.bankEntries(r, es)
			got = true
		}
	}
	return got
}

func (w *worker) drainInbox() {
	if w.inbox.n.Load() == 0 {
		return
	}
	var buf [8]bank.Entry[item]
	for _, e := range w.inbox.take(buf[:0]) {
		w.insertAt(e.Item, e.Depth)
	}
}

// dealt is what a deal did, for policy.SpreadAfter.
type dealt struct{ dealt, noTaker, refused bool }

// deal is the paper's dealAttempt, with requests: serve a worker that asked
// for work first, else offer spare threads to a worker whose mailbox is
// open (the index of open mailboxes names one, else a few random draws
// look for one): of its primary priority if we have some, else of the
// priority we run (the paper's choice). Only surplus is dealt: never the
// thread this worker is about to run (see sendTo).
func (w *worker) deal(now int64) (d dealt) {
	w.nextDeal = now + int64(w.rt.dealEvery)
	ws := w.rt.workers
	next := w.choose(w.cur, now)
	var ranks [8]int
	if id, req, ok := w.requests.Take(); ok && id != w.id {
		r, anything := policy.RequestedRank(req)
		d.dealt = w.offer(ws[id], policy.RequestOrder(ranks[:0], r, anything, w.cur, w.top), next)
		d.refused = !d.dealt && anything
		if !policy.DealsAfterRequest(d.dealt, anything) {
			return d
		}
	}
	if len(ws) < 2 {
		return d
	}
	// Offer the target its own primary priority first: that is the work it
	// is supposed to run this round and may be missing. A worker whose
	// mailbox is open for a rank this worker has surplus of, its primary or
	// the one it runs, is preferred: from the index, else among a few
	// draws. The index names no such worker: nobody takes this surplus.
	sp := w.surplus(w.primary, next)
	sc := w.cur >= 0 && w.cur != w.primary && w.surplus(w.cur, next)
	i := -1
	if sp || sc {
		i = policy.OpenVictim(w.id, len(ws), w.rand(), func(i int) uint64 { return w.rt.open.words(i, w.primary, sp, w.cur, sc) })
	}
	noTaker := i < 0 && (sp || sc)
	if i < 0 {
		i = policy.DealVictim(w.id, len(ws), w.rand, func(v int) bool { return ws[v].wants(w.cur) })
	}
	v := ws[i]
	d.dealt = w.offer(v, policy.OfferOrder(ranks[:0], int(v.primPub.Load()), w.cur), next)
	d.noTaker = !d.dealt && noTaker
	return d
}

// surplus reports whether bank r holds a thread to deal, given that the
// worker runs rank next next (policy.Keep); it prunes stale entries.
func (w *worker) surplus(r, next int) bool { return w.live(r) > policy.Keep(r, next, w.cur) }

// wants reports whether a deal of w's primary rank or of rank cur would find
// w's mailbox open: w sleeps, or donates its processor for want of work.
func (w *worker) wants(cur int) bool {
	return w.mail[w.primPub.Load()].State() == mailbox.Open || cur >= 0 && cur < len(w.mail) && w.mail[cur].State() == mailbox.Open
}

// offer deals to v from the first of ranks whose bank has surplus; it
// reports whether it dealt.
func (w *worker) offer(v *worker, ranks []int, next int) bool {
	for _, r := range ranks {
		if w.sendTo(v, r, next) {
			return true
		}
	}
	return false
}

// sendTo deals the oldest quarter (by fork potential) of bank r to v, if v's
// mailbox for r is open and can be claimed, and the bank holds surplus:
// the youngest thread of rank next, which this worker runs next, stays.
// Without that rule, two workers that both donate to an empty primary
// priority pass a thread of that priority back and forth by deals, neither
// running it. A fork of the running thread is fair game: with lazy forks it
// reached the bank only because work was wanted elsewhere.
func (w *worker) sendTo(v *worker, r, next int) bool {
	if r < 0 || r >= len(w.banks) {
		return false
	}
	if !w.surplus(r, next) { // stale entries pruned: the receiver must find threads
		return false
	}
	m := &v.mail[r]
	if m.State() != mailbox.Open || !m.TryClaim() {
		return false
	}
	w.rt.open.clear(r, v.id)
	w.rt.moves.Add(1)
	m.Send(w.banks[r].Split(nil))
	v.mailFlag.Store(1)
	v.attn.Store(1)
	v.wake()
	w.stats.dealsSent.Add(1)
	return true
}

// idle runs when the worker has nothing: open every mailbox, ask a random
// worker for work, then sleep until woken by new work. It returns with g
// holding a token again, awake, or none (g.w == nil) if g became surplus
// while asleep.
func (w *worker) idle(g *gor) {
	w.windDown()
	// From here on the worker counts as asleep: a waker hands the token back
	// to g, or a resumed thread takes the token over and leaves g among the
	// spares; either way g stops being the sleeper and parks to learn which.
	// Invariants S1-S5 (PROTOCOLS.md): the sleeper's identity, not a flag,
	// marks the state, no wake-up is lost, and a sleeper's banks are empty. It first spins briefly, since dealt work often follows a
	// request within microseconds, yielding the OS processor but not entering
	// Go's scheduler, which would keep this P from polling the network.
	g.w = nil
	w.sleeper.Store(g)
	deadline := w.rt.now() + int64(policy.IdleSpin)
	for w.sleeper.Load() == g {
		if w.hasWork() || w.rt.stopping.Load() {
			if w.sleeper.CompareAndSwap(g, nil) {
				g.w = w
				w.awake()
				return
			}
			break
		}
		if w.rt.now() >= deadline {
			break
		}
		osYield() // let the OS run other threads (the network poller's) meanwhile
	}
	g.park()
	if g.w != nil {
		g.w.awake()
	}
}

// awake readies a worker whose token came back to its sleeper: busy again,
// it wants only its primary rank, and its next pass through the scheduler
// knows it woke (policy.SpreadAfter).
func (w *worker) awake() {
	w.closeUnwanted()
	w.woke = true
}

// windDown readies w for sleep: nothing runs, every mailbox takes deals,
// and another worker is asked for work.
func (w *worker) windDown() {
	w.setRunning(policy.NoRank)
	for r := range w.mail {
		w.open(r)
	}
	w.ask(true)
}

// rest puts w, whose token the caller holds and gives up, to sleep with a
// parked spare as its sleeper, as if the spare had gone idle and parked:
// nothing is woken, so the next RunHere can take the token at once. It
// reports false, having done nothing, when w has work queued, no spare,
// or the runtime stops; the caller then hands the token on (passTo).
//
// Invariants S1 and S2 (PROTOCOLS.md): as in idle, the sleeper is published
// before the last look for work, so no wake-up is lost.
func (w *worker) rest() bool {
	if w.highest() >= 0 || w.hasWork() || w.rt.stopping.Load() || len(w.spares) == 0 {
		return false
	}
	sp := w.spare()
	w.windDown()
	// The holder of a sleeping worker is its sleeper, as after idle: the
	// caller's record may hold another worker's token later, and a revoker
	// must never find it as this worker's holder.
	w.holder.Store(sp)
	w.sleeper.Store(sp)
	if (w.hasWork() || w.rt.stopping.Load()) && w.sleeper.CompareAndSwap(sp, nil) {
		sp.resume(w)
	}
	return true
}

// ask posts a request for work of the primary priority to a random other
// worker and makes it look at it at its next preemption point. A worker
// asks when it is idle (anything: it takes work of any priority), and, once per
// pass through the scheduler and at most once a deal interval
// (policy.AsksForPrimary), when it donates its processor because its
// primary bank is empty (only the primary priority will do): lazy forks
// reach a bank only when someone wants work, so the worker that holds them
// must be told.
func (w *worker) ask(anything bool) {
	ws := w.rt.workers
	w.asked = true
	if len(ws) < 2 {
		return
	}
	v := ws[policy.AskVictim(w.id, len(ws), w.rand, func(v int) bool { return ws[v].sleeper.Load() != nil })]
	if v.requests.Post(w.id, policy.Request(w.primary, anything)) {
		v.attn.Store(1)
		w.stats.requests.Add(1)
	}
}

// hasWork reports work delivered from outside: inbox or mailboxes.
func (w *worker) hasWork() bool {
	return w.inbox.n.Load() != 0 || w.mailFlag.Load() != 0
}

// shutdown releases the worker's spare goroutines; the runtime is stopping.
func (w *worker) shutdown() {
	w.setRunning(policy.NoRank)
	for _, sp := range w.spares {
		sp.resume(nil)
	}
	w.spares = nil
}

// steer hands a thread from outside the workers (a submission, or a thread
// resumed after Await or Sleep) to the worker that can run it soonest: one
// whose primary priority it has and that runs something else or nothing,
// else an idle one, else one with that primary priority, else the one
// running the lowest priority. Workers that have passed no preemption point
// for policy.StaleAfter come last; if the chosen one is such a worker running a
// lower priority, its token is revoked and a new goroutine serves it.
func (rt *Runtime) steer(it item) { rt.steerAt(it, rt.now()) }

// steerAt is steer at time now.
func (rt *Runtime) steerAt(it item, now int64) {
	r := int32(it.t.rank)
	ws := rt.workers
	i, bestScore := policy.Steer(len(ws), int(rt.steerSeq.Add(1)), func(v int) int {
		w := ws[v]
		stale := now-w.lastService.Load() >= int64(policy.StaleAfter)
		return policy.SteerScore(int(r), int(w.running.Load()), int(w.primPub.Load()), w.sleeper.Load() != nil, stale)
	})
	best := ws[i]
	best.give(it)
	if policy.SteerRevokes(bestScore) {
		if v := rt.revoke(best, best.holder.Load(), r, true); v != nil {
			v.stats.rescues.Add(1)
			rt.newGor().start(v)
		}
	}
}
