package sim

import (
	"math/rand/v2"

	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// A virtual worker and its scheduling loop: internal/engine/sched.go's
// loop, service, newRound, next, choose, deal, sendTo, idle and ask, step
// for step, on the real banks and mailboxes, with the decisions of
// internal/policy. Time passes by costs: a worker at an event does what the
// runtime would do at that point, adding the cost of each operation to its
// local time t, and schedules its next event at t. internal/engine's
// simdiff_test.go checks, through Probe, that service, choose, next, idle
// and the wake-up here, and steer and the watchdog's look in sim.go, decide
// and leave the same state as the engine's.

// item is what banks, mailboxes and inboxes hold, as in the runtime: a
// thread that has not started (g == nil), or a continuation parked on g.
type item struct {
	t *vtask
	g *vgor
}

type stats struct {
	rounds, deals, requests, donations, preemptions, promotions, rescues, seizures int
	served, dropped                                                                int // requests answered by a deal, and taken without one
}

type vworker struct {
	s   *sim
	id  int
	rng *rand.Rand
	gen uint32 // generation of the pending evWorker event
	t   int64  // local time during a step

	banks    []bank.Bank[item]
	mail     []mailbox.Mailbox[bank.Entry[item]]
	requests mailbox.RequestCell
	inbox    []item
	attn     bool
	mailFlag bool
	asleep   bool
	sleptAt  int64
	beat     uint64

	mopen       []bool
	top         int
	primary     int
	nextRound   int64
	nextDeal    int64
	lastService int64
	asked       bool
	nextAsk     int64 // worker.nextAsk
	spreadTo    int64 // spreads until then (policy.SpreadAfter)
	woke        bool  // woken from sleep since the last pass through the scheduler
	count       int
	cur         int
	since       int64
	borrowed    []int64 // by rank
	total       int64   // recent time of the worker, run or not (policy.MayBorrow)
	used        []int64 // worker.used
	roundStart  int64   // worker.roundStart

	g        *vgor   // the goroutine running a thread on this worker, nil in the loop
	base     int64   // when the current step's demand for the core began (cores.go)
	dets     []*vgor // detached goroutines that share this worker's core, served in order
	win      window  // what the current step gave them
	detBusy  int     // detached goroutines of this worker that compute
	detTop   int     // their highest rank
	cpu      []int64
	stats    stats
	offerBuf []int
}

func newWorker(s *sim, id int) *vworker {
	n := s.ranks
	w := &vworker{
		s: s, id: id, rng: rand.New(rand.NewPCG(s.cfg.Seed, uint64(id)+1)),
		banks: make([]bank.Bank[item], n), mail: make([]mailbox.Mailbox[bank.Entry[item]], n),
		mopen: make([]bool, n), cpu: make([]int64, n), borrowed: make([]int64, n), used: make([]int64, n),
		top: policy.NoRank, cur: policy.NoRank, detTop: policy.NoRank, count: s.p.CheckEvery,
	}
	for r := range n {
		w.used[r] = policy.UsageAtShare(s.crit.ShareByRank(r), s.p.Quantum)
	}
	w.total = policy.UsageWindow(s.p.Quantum)
	w.newRound(0)
	w.schedule() // every worker starts in its loop at 0
	return w
}

// schedule makes the worker go on at its local time t, later by the share
// of its core that detached goroutines take meanwhile (cores.go).
func (w *vworker) schedule() {
	w.share()
	w.s.clock.at(event{t: w.t, kind: evWorker, w: int32(w.id), gen: w.gen})
}

// step is the worker's event: it goes on with the thread it runs, or with
// its scheduling loop, until something takes time.
func (w *vworker) step(now int64) {
	w.t, w.base = now, now
	if w.g != nil {
		w.g.advance(w)
	} else {
		w.loop()
	}
	if w.asleep {
		w.s.log.add(Entry{T: now, Kind: evWorker, Worker: int32(w.id), Rank: policy.NoRank})
		return
	}
	var id int64
	if w.g != nil && len(w.g.frames) > 0 {
		id = w.g.frames[len(w.g.frames)-1].t.id
	}
	w.s.log.add(Entry{T: now, Kind: evWorker, Worker: int32(w.id), Rank: int32(w.cur), Thread: id})
	w.schedule()
}

// loop is one pass of gor.loop: periodic duties when due, then run the
// thread next chooses, or go idle.
func (w *vworker) loop() {
	if w.due() {
		w.count = w.s.p.CheckEvery
		w.service()
	}
	w.dispatch()
}

// dispatch takes the next thread and starts it, or idles (the part of
// gor.loop and gor.handOff after the duties).
func (w *vworker) dispatch() {
	for {
		it, ok := w.next()
		if !ok {
			w.idle()
			return
		}
		if it.g != nil { // a continuation: its goroutine takes the token
			w.setRunning(it.t.rank)
			w.t += w.s.c.Handoff
			w.g = it.g
			return
		}
		if !it.t.claim() {
			continue // a joiner ran it inline already
		}
		w.setRunning(it.t.rank)
		w.g = &vgor{}
		w.g.start(w, it.t)
		return
	}
}

// due is gor.due: the attention word is raised or CheckEvery points went by.
func (w *vworker) due() bool {
	if w.attn {
		return true
	}
	w.count--
	return w.count <= 0
}

// service is worker.service: new round, deal, then take in what arrived.
func (w *vworker) service() {
	w.t += w.s.c.Service
	w.attn = false
	w.asked = false
	w.beat++
	w.lastService = w.t
	if w.t >= w.nextRound {
		w.t += w.s.c.Round
		w.newRound(w.t)
	}
	var d dealt
	if policy.DealDue(w.t, w.nextDeal, w.requests.Pending(), policy.Spreading(w.spreadTo, w.t)) {
		d = w.deal()
	}
	got := w.woke && len(w.inbox) > 0
	w.woke = false
	for _, it := range w.inbox {
		w.insert(it)
	}
	clear(w.inbox)
	w.inbox = w.inbox[:0]
	got = w.receive() || got
	w.spreadTo = policy.SpreadAfter(w.spreadTo, w.t, w.s.p.DealInterval, d.dealt, d.noTaker, got, d.refused)
	if policy.Spreading(w.spreadTo, w.t) {
		w.attn = true
	}
}

// newRound is worker.newRound with aligned rounds.
func (w *vworker) newRound(now int64) {
	w.charge(now)
	clear(w.borrowed)
	policy.Decay(w.used, w.roundStart, now, w.s.p.Quantum)
	w.total = policy.DecayRecord(w.total, w.roundStart, now, w.s.p.Quantum)
	w.roundStart = now
	for r := range w.banks {
		if r != w.cur {
			w.live(r) // worker.newRound prunes too
		}
	}
	w.primary = policy.AlignedPrimary(w.s.crit, w.s.cfg.Seed, policy.RoundOf(now, w.s.p.Quantum), w.s.ranks)
	w.nextRound = policy.RoundEnd(now, w.s.p.Quantum)
	w.closeUnwanted()
	w.stats.rounds++
}

// next removes the thread to run now (worker.next).
func (w *vworker) next() (item, bool) {
	r := w.choose(policy.NoRank)
	if r < 0 {
		return item{}, false
	}
	if r != w.primary {
		w.stats.donations++
	}
	it, _, _ := w.banks[r].Remove()
	return it, true
}

// choose is worker.choose over policy.Choose.
func (w *vworker) choose(cur int) int {
	top := max(w.highest(), cur)
	r, donating := policy.Choose(top, w.primary, cur, w.banks[w.primary].Len(), w.mayBorrow)
	if donating {
		w.open(w.primary)
		if policy.AsksForPrimary(w.asked, w.t, w.nextAsk) {
			w.nextAsk = w.t + w.s.p.DealInterval
			w.ask(false)
		}
	}
	if policy.Lends(r, w.primary, donating) {
		w.attn = true
	}
	return r
}

// mayBorrow says whether rank top may run above the primary one now.
func (w *vworker) mayBorrow(top int) bool {
	return w.s.crit.ShareByRank(top) > 0 && !w.s.p.NoBorrow &&
		policy.MayBorrow(w.used[top], w.total, w.s.crit.ShareByRank(top), w.borrowed[top], w.s.p.Budget, w.cur == top, w.since, w.t)
}

// waitingTop is worker.waitingTop: the highest rank of the threads that
// wait for w in its banks, inbox or full mailboxes, or policy.NoRank.
func (w *vworker) waitingTop() int {
	top := w.highest()
	for _, it := range w.inbox {
		top = max(top, it.t.rank)
	}
	for r := len(w.mail) - 1; r > top; r-- {
		if w.mail[r].State() == mailbox.Full {
			return r
		}
	}
	return top
}

func (w *vworker) highest() int {
	for r := w.top; r >= 0; r-- {
		if w.banks[r].Len() > 0 {
			w.top = r
			return r
		}
	}
	w.top = policy.NoRank
	return policy.NoRank
}

func (w *vworker) insert(it item) {
	r := it.t.rank
	w.banks[r].Insert(it, int(it.t.depth))
	w.top = max(w.top, r)
	if w.mopen[r] {
		w.refuse(r)
	}
}

// live is worker.live: the live threads in bank r, stale entries pruned.
func (w *vworker) live(r int) int {
	b := &w.banks[r]
	if b.Len() > 0 {
		b.Prune(isLive)
	}
	return b.Len()
}

func (w *vworker) refuse(r int) {
	w.mopen[r] = false
	w.s.unindex(w.id, r)
	w.bankEntries(r, w.mail[r].Close())
}

func (w *vworker) closeUnwanted() { policy.Unwanted(w.mopen, w.primary, w.refuse) }

func (w *vworker) open(r int) {
	if !w.mopen[r] && w.mail[r].Open() {
		w.mopen[r] = true
		w.s.open[r][w.id/64] |= 1 << uint(w.id%64) // worker.index
	}
}

func (w *vworker) bankEntries(r int, es []bank.Entry[item]) {
	if len(es) == 0 {
		return
	}
	w.t += w.s.c.Receive
	for _, e := range es {
		w.banks[r].Insert(e.Item, e.Depth)
	}
	w.top = max(w.top, r)
}

// receive is worker.receive; it reports whether a deal came in.
func (w *vworker) receive() bool {
	if !w.mailFlag {
		return false
	}
	w.mailFlag = false
	got := false
	for r := range w.mail {
		if es, ok := w.mail[r].Receive(); ok {
			w.mopen[r] = false
			w.s.unindex(w.id, r)
			w.bankEntries(r, es)
			got = true
		}
	}
	return got
}

// dealt is what a deal did, for policy.SpreadAfter.
type dealt struct{ dealt, noTaker, refused bool }

// deal is worker.deal: serve a request first, else offer to a random worker.
func (w *vworker) deal() (d dealt) {
	w.nextDeal = w.t + w.s.p.DealInterval
	ws := w.s.workers
	next := w.choose(w.cur)
	if id, req, ok := w.requests.Take(); ok && id != w.id {
		r, anything := policy.RequestedRank(req)
		w.offerBuf = policy.RequestOrder(w.offerBuf[:0], r, anything, w.cur, w.top)
		d.dealt = w.offer(ws[id], w.offerBuf, next)
		d.refused = !d.dealt && anything
		if d.dealt {
			w.stats.served++
		} else {
			w.stats.dropped++
		}
		if !policy.DealsAfterRequest(d.dealt, anything) {
			return d
		}
	}
	if len(ws) < 2 {
		return d
	}
	// Look up the index for the ranks this worker has surplus of.
	sp, sc := w.surplus(w.primary, next), w.cur >= 0 && w.cur != w.primary && w.surplus(w.cur, next)
	i := -1
	if sp || sc {
		i = policy.OpenVictim(w.id, len(ws), w.rng.Uint64(), func(i int) uint64 { return w.s.indexed(i, w.primary, sp, w.cur, sc) })
	}
	noTaker := i < 0 && (sp || sc)
	if i < 0 {
		i = policy.DealVictim(w.id, len(ws), w.rng.Uint64, func(v int) bool { return ws[v].wants(w.cur) })
	}
	v := ws[i]
	w.offerBuf = policy.OfferOrder(w.offerBuf[:0], v.primary, w.cur)
	d.dealt = w.offer(v, w.offerBuf, next)
	d.noTaker = !d.dealt && noTaker
	return d
}

// surplus is worker.surplus: bank r holds a thread to deal, stale entries
// pruned.
func (w *vworker) surplus(r, next int) bool {
	return w.live(r) > policy.Keep(r, next, w.cur)
}

// wants is worker.wants: a deal of its primary rank or of rank cur would
// find an open mailbox.
func (w *vworker) wants(cur int) bool {
	return w.mail[w.primary].State() == mailbox.Open || cur >= 0 && cur < len(w.mail) && w.mail[cur].State() == mailbox.Open
}

// offer is worker.offer: deal the first rank of ranks that sendTo can; it
// reports whether one could.
func (w *vworker) offer(v *vworker, ranks []int, next int) bool {
	for _, r := range ranks {
		if w.sendTo(v, r, next) {
			return true
		}
	}
	return false
}

// sendTo is worker.sendTo: deal the oldest quarter of bank r to v's open
// mailbox, keeping the thread this worker runs next.
func (w *vworker) sendTo(v *vworker, r, next int) bool {
	if r < 0 || r >= len(w.banks) {
		return false
	}
	if !w.surplus(r, next) {
		return false
	}
	m := &v.mail[r]
	if m.State() != mailbox.Open || !m.TryClaim() {
		return false
	}
	w.s.unindex(v.id, r)
	w.t += w.s.c.Deal
	m.Send(w.banks[r].Split(nil))
	v.mailFlag = true
	v.attn = true
	v.wake(w.t)
	w.stats.deals++
	return true
}

func isLive(it item) bool { return it.g != nil || it.t.state == stNew }

// hasLive is worker.hasLive.
func (w *vworker) hasLive(r int) bool { return w.banks[r].Any(isLive) }

// idle is worker.idle: open every mailbox, ask for anything, sleep.
func (w *vworker) idle() {
	w.setRunning(policy.NoRank)
	for r := range w.mail {
		w.open(r)
	}
	w.ask(true)
	w.asleep = true
	w.sleptAt = w.t
	w.serveAsleep()
}

// wake is worker.wake: a sleeping worker goes on after the spin's reaction
// time, or a park's wake-up once the spin is over.
func (w *vworker) wake(at int64) {
	if !w.asleep {
		return
	}
	t := max(at, w.sleptAt) + w.s.c.SpinWake
	if at-w.sleptAt >= w.s.p.IdleSpin {
		t = at + w.s.c.Wake
	}
	w.resume(at, t)
}

// resume makes a sleeping worker go on at t, its core busy again from at.
func (w *vworker) resume(at, t int64) {
	w.asleep = false
	w.woke = true
	w.gen++
	w.stopServing(at)
	w.t, w.base = t, at
	w.closeUnwanted() // busy again: only the primary rank is wanted
	w.schedule()
}

func (w *vworker) ask(anything bool) {
	ws := w.s.workers
	w.asked = true
	if len(ws) < 2 {
		return
	}
	v := ws[policy.AskVictim(w.id, len(ws), w.rng.Uint64, func(v int) bool { return ws[v].asleep })]
	if v.requests.Post(w.id, policy.Request(w.primary, anything)) {
		v.attn = true
		w.stats.requests++
	}
}

// give is worker.give: into the inbox, with attention, waking the worker.
func (w *vworker) give(it item, now int64) {
	w.inbox = append(w.inbox, it)
	w.attn = true
	w.wake(now + w.s.c.Steer)
}

func (w *vworker) setRunning(r int) {
	if r == w.cur {
		return
	}
	w.charge(w.t)
	w.cur = r
}

func (w *vworker) charge(now int64) {
	d := now - w.since
	if w.cur >= 0 {
		w.cpu[w.cur] += d
		w.used[w.cur] += d
		if w.cur > w.primary {
			w.borrowed[w.cur] += d
		}
	}
	w.total += d
	w.since = now
}

// revoke takes w's token from the goroutine running a thread's segment of
// rank below below (Runtime.revoke, internal/engine/revoke.go): the
// goroutine goes on detached, sharing w's core (cores.go), and comes back
// as a continuation when its segment ends; w goes on with a new goroutine.
// busy says it computes: policy.RefuseRevoke limits those. seize counts it
// as a seizure (a ready thread took a worker that would switch to it), not
// a rescue of a stale worker. cost is the new goroutine's taking of the
// token: Costs.Arrive when an arriving goroutine takes it, Costs.Handoff
// when a fresh one does.
func (s *sim) revoke(w *vworker, below int, busy, seize bool, cost, now int64) bool {
	g := w.g
	if g == nil || !g.inSegment || w.cur >= below {
		return false
	}
	if policy.RefuseRevoke(busy, w.detBusy, w.cur, w.detTop, below) {
		return false
	}
	if busy {
		w.detBusy++
		w.detTop = max(w.detTop, w.cur)
	}
	g.detachedFrom, g.detBusy = w, busy
	// The goroutine's pending event, at the segment's end, is void; what
	// the segment still needs is what the worker's step had not had (the
	// segment ends the step).
	w.gen++
	g.rem = min(g.segWork, w.win.left(now))
	w.unshare(now)
	w.dets = append(w.dets, g)
	for i, r := range s.rank {
		if r == w.cur {
			s.res.Detached[i] += g.rem
		}
	}
	g.promoteAll(w)
	w.g = nil
	if seize {
		w.stats.seizures++
	} else {
		w.stats.rescues++
	}
	w.attn = true
	w.t, w.base = now, now
	w.setRunning(policy.NoRank)
	w.t += cost
	w.schedule()
	return true
}

// reattach brings a detached goroutine back at its next preemption point:
// its thread takes a worker at once if one sleeps or would switch to it
// (takeOver), else it is steered again as a continuation (gor.reattach,
// rejoin).
func (s *sim) reattach(g *vgor, now int64) {
	w := g.detachedFrom
	g.detachedFrom = nil
	w.dropDetached(g)
	if g.detBusy {
		w.detBusy--
	}
	if w.detBusy == 0 {
		w.detTop = policy.NoRank
	}
	g.inSegment = false
	it := item{t: g.frames[len(g.frames)-1].t, g: g}
	if s.takeOver(it, now) < 0 { // gor.rejoin
		s.steer(it, now)
	}
}

// indexed is word i of the index of open mailboxes of rank primary if p,
// or rank cur if c (openIndex.words).
func (s *sim) indexed(i, primary int, p bool, cur int, c bool) uint64 {
	var x uint64
	if p {
		x = s.open[primary][i]
	}
	if c {
		x |= s.open[cur][i]
	}
	return x
}

// unindex clears worker v's bit in the index of open mailboxes of rank r
// (the mailbox closed, or a sender claimed it).
func (s *sim) unindex(v, r int) { s.open[r][v/64] &^= 1 << uint(v%64) }
