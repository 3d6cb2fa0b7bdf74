package engine

import (
	"sync"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/mailbox"
)

// item is what banks, mailboxes and inboxes hold: a thread that has not
// started (g == nil), or the continuation of a started one, parked on g.
type item struct {
	t *Task
	g *gor
}

// worker is one processor: its thread banks (one per priority rank), its
// mailboxes, request cell and inbox, and the state of its scheduling loop.
// Its type says who touches what, as tokio's worker does with Core and
// Remote: the fields of remote are read or written by other threads too
// (atomics, or under a lock); those of core only by the goroutine holding
// the token, in modeSched, and they travel with the token (invariants T1,
// T2 and M1, PROTOCOLS.md). rt and id never change. The groups are
// embedded, so that code names the fields alike (w.banks, w.attn), and a
// cache-line pad keeps core off the lines that other threads write.
type worker struct {
	rt *Runtime
	id int

	remote
	_ cacheLinePad
	core

	// counters, atomic: written by the holder (rescues and seizures by the
	// goroutine that revoked the token, before it hands the worker on), read
	// by Stats
	stats workerStats
}

// remote is the part of a worker that other threads touch. Each field says
// who writes it and who reads it besides the holder, and the invariant of
// PROTOCOLS.md that orders them.
type remote struct {
	// mail[r] receives deals of rank r: opened and closed by the holder,
	// claimed and filled by a dealing worker (T4, mailbox.Mailbox).
	mail []mailbox.Mailbox[bank.Entry[item]]
	// requests holds one request for work: posted by an asking worker,
	// taken by the holder (ask, deal).
	requests mailbox.RequestCell
	// inbox receives threads from outside the workers: steer pushes
	// (give: submissions, resumed threads), the holder drains; a sleeper
	// and quiescent read its count (S2, Q1).
	inbox inbox
	// attn raised: pass through the scheduler at the next point. Raised by
	// anyone who gives the worker something to see (give, sendTo, ask, the
	// ticker), lowered by the holder in service; a hint, read without order.
	attn atomic.Uint32
	// mailFlag is raised by a sender after filling one of mail, lowered by
	// the holder in receive; a sleeper reads it after publishing itself
	// (S2), quiescent reads it too (Q1).
	mailFlag atomic.Uint32
	// sleeper is the loop goroutine of the worker while it sleeps, else
	// nil: stored by the worker going to sleep, claimed by compare-and-swap
	// by it or by a waker (S1, S2, S4); read by steer, ask, the ticker and
	// quiescent.
	sleeper atomic.Pointer[gor]
	// holder is the goroutine holding the token: stored as the token is
	// handed on (start, resume, adopt, rest), read by revokers and the
	// watchdog (M5, R2).
	holder atomic.Pointer[gor]
	// beat counts passes through the scheduler, lastService is when the
	// worker last passed, roundEnd when its round ends: stored by the holder
	// in service and newRound, read by the watchdog (beat, roundEnd) and by
	// steer and seize (lastService) to see a stuck worker ("When tokens are
	// revoked", PROTOCOLS.md).
	beat        atomic.Uint64
	lastService atomic.Int64
	roundEnd    atomic.Int64
	// cpu is the processor its holder's OS thread ran on when last seen, -1
	// if unknown: stored by the holder in service (and unstack, which moves
	// the thread) and by a seizer as it takes the token, read by seize to
	// try nearby workers first (R) and by other workers' unstack. A hint:
	// a stale value costs a placement, never a thread.
	cpu atomic.Int32
	// running is the rank being run (policy.NoRank when none), primPub the
	// primary rank of the current round: the holder publishes core.cur and
	// core.primary here for steer, seize, deals (OfferOrder, wants) and the
	// watchdog, which may read a value one change old.
	running atomic.Int32
	primPub atomic.Int32

	// detached goroutines of this worker (revoke.go), under detMu: counted
	// by a revoker, uncounted by the detached goroutine when it comes back
	// (M6).
	detMu   sync.Mutex
	detBusy int   // computing ones
	detTop  int32 // highest rank among the computing ones, policy.NoRank if none
}

// core is the part of a worker that only the goroutine holding its token
// touches, in modeSched; it travels with the token, and each holder sees
// its predecessor's writes (T2, M2). No field needs a lock or an atomic.
type core struct {
	banks      []bank.Bank[item]
	mopen      []bool // mailbox r was opened by us and not closed since
	top        int    // no bank above this rank has threads
	primary    int
	nextRound  int64
	nextDeal   int64
	nextYield  int64
	asked      bool    // a request was posted since the last pass through the scheduler
	nextAsk    int64   // a donating worker asks for its primary rank again from then (policy.AsksForPrimary)
	woke       bool    // came out of idle with the token since the last pass through the scheduler
	spreadTo   int64   // the worker spreads until then (policy.SpreadAfter; see service)
	cur        int     // rank being run, as in running
	since      int64   // when cur started being accounted
	sinceTid   int32   // the OS thread that read the processor clock at since (0: none)
	sinceCPU   int64   // its processor time then, in ns (negative: unknown)
	total      int64   // recent time of this worker, run or not, decayed as used (policy.MayBorrow)
	borrowed   []int64 // by rank: time run this round above the primary rank
	used       []int64 // by rank: recent processor time on this worker, decayed at round starts (policy.Decay)
	roundStart int64   // when the current round began
	critVer    uint64
	sampler    *fairness.Sampler
	shares     []float64 // rank r's share of the criterion: with none it never borrows (choose, policy.MayBorrow)
	rng        uint64
	spares     []*gor // parked goroutines ready to carry on the loop (T2)
	callers    []*gor // records of ordinary goroutines that ran threads in RunHere (R3)
}

func newWorker(rt *Runtime, id int, seed uint64) *worker {
	n := len(rt.ranks)
	w := &worker{
		rt: rt,
		id: id,
		remote: remote{
			mail:   make([]mailbox.Mailbox[bank.Entry[item]], n),
			detTop: policy.NoRank,
		},
		core: core{
			banks:    make([]bank.Bank[item], n),
			mopen:    make([]bool, n),
			shares:   make([]float64, n),
			borrowed: make([]int64, n),
			used:     make([]int64, n),
			top:      -1,
			cur:      policy.NoRank,
			rng:      seed | 1,
		},
		stats: newWorkerStats(n),
	}
	w.running.Store(policy.NoRank)
	w.cpu.Store(-1)
	w.newRound(0)
	return w
}

// openIndex says which workers' mailboxes are open, by rank: bit v%64 of
// word v/64 of rank r is set while worker v's mailbox r is open, so that a
// deal finds a worker that wants work in n/64 loads (policy.OpenVictim)
// instead of drawing workers at random.
//
// Invariant T4 (PROTOCOLS.md): the index is a hint; the mailbox's state
// decides every deal. Nothing on the fork path reads or writes it.
type openIndex [][]atomic.Uint64

func newOpenIndex(ranks, workers int) openIndex {
	x := make(openIndex, ranks)
	for r := range x {
		x[r] = make([]atomic.Uint64, (workers+63)/64)
	}
	return x
}

// set marks worker v's mailbox r open.
func (x openIndex) set(r, v int) { x[r][v/64].Or(1 << uint(v%64)) }

// clear marks worker v's mailbox r closed or claimed.
func (x openIndex) clear(r, v int) { x[r][v/64].And(^(uint64(1) << uint(v%64))) }

// words is word i of the index of rank primary if p, or rank cur if c: the
// workers that a deal of either would reach.
func (x openIndex) words(i, primary int, p bool, cur int, c bool) uint64 {
	var w uint64
	if p {
		w = x[primary][i].Load()
	}
	if c {
		w |= x[cur][i].Load()
	}
	return w
}

// inbox receives threads from outside the worker: submissions from ordinary
// goroutines and threads resumed after Await or Sleep.
type inbox struct {
	mu    sync.Mutex
	items []bank.Entry[item]
	n     atomic.Int32
	top   atomic.Int32 // 1 + the highest rank among items, 0 when empty
}

// push queues it, which the caller owns: it records it.t's depth now. An
// entry may go stale while it waits, as bank and mailbox entries may: a
// submitted thread can be claimed and run by a thread that joins it, and
// then its depth changes (Task.Nest, joins), so the worker that drains the
// inbox must not read it.
func (b *inbox) push(it item) {
	b.mu.Lock()
	b.items = append(b.items, bank.Entry[item]{Item: it, Depth: int(it.t.depth)})
	if r := it.t.rank + 1; r > b.top.Load() {
		b.top.Store(r)
	}
	b.n.Add(1)
	b.mu.Unlock()
}

// take empties the inbox into dst.
func (b *inbox) take(dst []bank.Entry[item]) []bank.Entry[item] {
	if b.n.Load() == 0 {
		return dst
	}
	b.mu.Lock()
	dst = append(dst, b.items...)
	clear(b.items)
	b.items = b.items[:0]
	b.top.Store(0)
	b.n.Store(0)
	b.mu.Unlock()
	return dst
}

// wake releases the worker if it sleeps in idle.
func (w *worker) wake() {
	if sp := w.sleeper.Load(); sp != nil && w.sleeper.CompareAndSwap(sp, nil) {
		sp.resume(w)
	}
}

// give queues it in w's inbox and makes w look at it soon.
func (w *worker) give(it item) {
	w.rt.moves.Add(1)
	w.inbox.push(it)
	w.attn.Store(1)
	w.wake()
}

// rand is a xorshift generator private to the token holder.
func (w *worker) rand() uint64 {
	w.rng ^= w.rng << 13
	w.rng ^= w.rng >> 7
	w.rng ^= w.rng << 17
	return w.rng
}

// setRunning records that the worker now runs rank r (policy.NoRank: none),
// charging the time since the last change to the rank it ran. Reading the
// clock only on changes keeps it off the spawn path.
func (w *worker) setRunning(r int) {
	if r == w.cur {
		return
	}
	now := w.rt.now()
	w.charge(now)
	w.cur = r
	w.running.Store(int32(r))
}

// charge accounts the time since the last charge to the running rank: the
// wall time to its statistics, and to its share of the worker (used,
// borrowed, total) the processor time its OS thread had meanwhile, if the
// stretch ran on one thread (policy.Charge). Time with no rank running
// counts in total as it passed.
func (w *worker) charge(now int64) {
	d := now - w.since
	tid, cpu := spanClock()
	c := d
	if w.cur >= 0 {
		if tid != 0 && tid == w.sinceTid && w.sinceCPU >= 0 && cpu >= 0 {
			c = policy.Charge(d, cpu-w.sinceCPU)
		}
		w.stats.cpu[w.cur].Add(d)
		w.used[w.cur] += c
		if w.cur > w.primary {
			w.borrowed[w.cur] += c
		}
	}
	w.total += c
	w.since, w.sinceTid, w.sinceCPU = now, tid, cpu
}
