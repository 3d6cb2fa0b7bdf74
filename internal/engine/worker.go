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
// Fields under "owner" are touched only by the goroutine holding the token;
// the hand-off channel orders them between holders (invariants T1 and T2,
// PROTOCOLS.md).
type worker struct {
	rt *Runtime
	id int

	// shared with other workers
	mail        []mailbox.Mailbox[bank.Entry[item]]
	requests    mailbox.RequestCell
	inbox       inbox
	attn        atomic.Uint32       // raised: pass through the scheduler at the next point
	mailFlag    atomic.Uint32       // raised by a sender after filling one of mail
	sleeper     atomic.Pointer[gor] // the loop goroutine of the worker while it sleeps, else nil
	holder      atomic.Pointer[gor] // the goroutine holding the token (see revoke.go)
	beat        atomic.Uint64       // counts passes through the scheduler, for the watchdog
	lastService atomic.Int64        // when the worker last passed through the scheduler
	roundEnd    atomic.Int64        // when the worker's current round ends
	cpu         atomic.Int32        // the processor its holder's OS thread ran on when last seen, -1 if unknown (seize)

	running atomic.Int32 // rank being run, policy.NoRank when none
	primPub atomic.Int32 // primary rank of the current round

	// detached goroutines of this worker (revoke.go), under detMu
	detMu   sync.Mutex
	detBusy int   // computing ones
	detTop  int32 // highest rank among the computing ones, policy.NoRank if none

	// owner: touched only by the holder, in modeSched (revoke.go); kept off
	// the cache lines of the shared fields above
	_          cacheLinePad
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
	borrowed   []int64 // by rank: time run this round above the primary rank
	used       []int64 // by rank: recent processor time on this worker, decayed at round starts (policy.Decay)
	roundStart int64   // when the current round began
	critVer    uint64
	sampler    *fairness.Sampler
	lends      []bool    // rank r has a share, so it may borrow (see choose)
	shares     []float64 // rank r's share of the criterion (policy.MayBorrow)
	rng        uint64
	spares     []*gor // parked goroutines ready to carry on the loop
	callers    []*gor // records of ordinary goroutines that ran threads in RunHere

	stats workerStats
}

func newWorker(rt *Runtime, id int, seed uint64) *worker {
	n := len(rt.ranks)
	w := &worker{
		rt:       rt,
		id:       id,
		mail:     make([]mailbox.Mailbox[bank.Entry[item]], n),
		banks:    make([]bank.Bank[item], n),
		mopen:    make([]bool, n),
		lends:    make([]bool, n),
		shares:   make([]float64, n),
		borrowed: make([]int64, n),
		used:     make([]int64, n),
		top:      -1,
		cur:      policy.NoRank,
		detTop:   policy.NoRank,
		rng:      seed | 1,
		stats:    newWorkerStats(n),
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

// charge accounts the time since the last charge to the running rank.
func (w *worker) charge(now int64) {
	if w.cur >= 0 {
		d := now - w.since
		w.stats.cpu[w.cur].Add(d)
		w.used[w.cur] += d
		if w.cur > w.primary {
			w.borrowed[w.cur] += d
		}
	}
	w.since = now
}
