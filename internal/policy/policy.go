// Package policy holds the pure decisions of fairly's scheduler: the ones
// that the runtime and the simulator (internal/sim) must take alike, so that
// what the simulator shows at 128 workers is what the runtime would do. A
// decision here reads only its arguments: no clock, no shared memory, no
// random generator of its own.
//
// Ranks are priority ranks as in package fairness (0 the lowest); NoRank
// stands for "no rank" (the scheduling loop between threads, or idle).
// tuning.go holds the constants that the engine and the simulator share,
// each with where its value comes from.
package policy

import (
	"math/bits"

	"github.com/fairlyprompt/fairly/fairness"
)

// AlignedPrimary is the primary rank of aligned round k (the round holding
// time kQ to (k+1)Q on every worker) under criterion c with ranks ranks and
// the runtime's seed. It walks a golden-ratio (Weyl) sequence through the
// cumulative shares, so that every window of n rounds gives rank r about
// n·F(r) rounds, up to a small constant; random draws would stray by √n.
// A rank with no share is never primary.
func AlignedPrimary(c *fairness.Criterion, seed, k uint64, ranks int) int {
	u := float64((seed+k*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	sum := 0.0
	for r := range ranks {
		sum += c.ShareByRank(r)
		if u < sum && c.ShareByRank(r) > 0 {
			return r
		}
	}
	return ranks - 1
}

// RoundOf is the number of the aligned round that holds time now, and
// RoundEnd when that round ends, for quantum q (all in nanoseconds).
func RoundOf(now, q int64) uint64 { return uint64(now / q) }

// RoundEnd is when the aligned round holding time now ends, for quantum q.
func RoundEnd(now, q int64) int64 { return (now/q + 1) * q }

// DefaultBudget is the prompt budget of a round of quantum q when the
// configuration gives none: the whole round, so that only the share bound
// of MayBorrow limits borrowing. A per-round budget of a twentieth stopped
// an interactive priority whose requests came faster than a few a round
// while it used less than its share (docs/results.md at a954a6a^,
// "Borrowing while under the share"); a smaller budget still caps what one round lends.
func DefaultBudget(q int64) int64 { return q }

// Choose is the worker's choice of the rank to run. top is the highest rank
// with work, counting the running thread's rank cur (NoRank if none runs);
// primary is the round's primary rank and primaryLen how many threads its
// bank holds. It returns the primary rank when that has work, unless top is
// higher and borrow(top) says top may borrow (it has a share of its own, it
// used less than that share of the worker lately, and the round's prompt
// budget is not spent: see MayBorrow); else top (donation). donating
// reports that the primary rank has no work: the worker then opens its
// primary mailbox and asks for work of that rank. borrow is called only
// when its answer matters, since it may read a clock.
func Choose(top, primary, cur, primaryLen int, borrow func(top int) bool) (rank int, donating bool) {
	if top < 0 {
		return NoRank, false
	}
	if primary != cur && primaryLen == 0 {
		return top, true
	}
	if top > primary && borrow(top) {
		return top, false
	}
	return primary, false
}

// Lends reports whether a worker that chose rank, with donating as Choose
// gave it, lends its round to a rank above the primary one, whose threads
// wait. Then every preemption point must pass through the scheduler until
// the borrower reaches its share or the budget runs out (MayBorrow):
// points are otherwise counted off CheckEvery at a time, and a busy
// borrower (a priority whose threads are always ready) ran on for that
// many, well past its budget, which took a lower primary priority's rounds
// from it (docs/results.md at 04ac75d, "Table 1: where the stretch beyond
// 1/F comes from").
func Lends(rank, primary int, donating bool) bool { return rank > primary && !donating }

// UsageWindow is the time that a worker's decayed record of processor time
// stands for, with quantum q: a rank that runs all the time reaches about
// UsageWindow(q), one that runs a fraction f of the time about f times it.
func UsageWindow(q int64) int64 { return q << UsageShift }

// UsageAtShare is the record of a rank that had its share share of the
// worker lately (quantum q): where a worker starts every rank, and starts
// again when the criterion changes, so that a priority that is busy from
// the start does not borrow for the first window as if it had been idle
// before.
func UsageAtShare(share float64, q int64) int64 { return int64(share * float64(UsageWindow(q))) }

// Charge is what a stretch of wall time wall, in which the worker's OS
// thread ran for cpu (negative: unknown), costs the rank that ran it: the
// processor time, at most the wall time. On a machine whose cores are
// oversubscribed (ordinary goroutines computing beside the workers, other
// processes) the OS takes the worker's thread off its core now and then,
// and a stretch charged in wall time costs the rank that happened to run
// across such a gap many times what it used: an echo beside ordinary
// goroutines lost the right to borrow at a small share (docs/design.md,
// "Prompt borrowing").
// The total time a worker had is charged the same way, so that a rank that
// runs all the time still has all of it.
func Charge(wall, cpu int64) int64 {
	if cpu < 0 || cpu > wall {
		return wall
	}
	return cpu
}

// Decay ages a worker's record of recent processor time by rank, used, at
// a round start at now, the previous one having been at start (quantum q,
// all in nanoseconds): each entry keeps 1 - 1/2^UsageShift of itself per
// quantum gone by, at least one.
func Decay(used []int64, start, now, q int64) {
	for r, x := range used {
		used[r] = DecayRecord(x, start, now, q)
	}
}

// DecayRecord ages one record of recent time, x, as Decay ages each rank's:
// the worker's record of the time it had (total) goes through it too.
func DecayRecord(x, start, now, q int64) int64 {
	for k := max(1, int64(RoundOf(now, q))-int64(RoundOf(start, q))); k > 0 && x>>UsageShift > 0; k-- {
		x -= x >> UsageShift
	}
	return x
}

// MayBorrow reports whether a rank with share share of the criterion may
// borrow the round from the primary rank: the processor time it had on the
// worker lately, used (see Decay; its own rounds, donations and borrowing
// alike), is below share of total, the time the worker had lately, whether
// it ran a thread or not (see Charge), and its prompt budget for the
// round has time left: borrowed is the time it already ran this round above
// the primary rank. running says the worker runs it now, since since (at
// now; all in nanoseconds).
//
// Borrowing is for promptness: a thread that arrives (submitted, resumed
// after Await or Sleep, dealt), and what it forks, need not wait for a
// round of its own priority. The share bound is a credit, as in weighted
// fair queuing: a priority that uses less than its share of the worker,
// such as an interactive one, borrows whenever it has work, however often
// it arrives, while one that gets its share from its own rounds and
// donations (a batch, Table 1's sink, whose threads are ready all the time)
// does not borrow, so that borrowing never gives a priority more than its
// share and the criterion still bounds everyone's stretch. The earlier rule
// (borrow only a priority that became ready lately, up to a twentieth of
// each round) barred the interactive priority too once its requests came
// faster than rounds began (docs/results.md at a954a6a^, "Borrowing while
// under the share"). The budget, per rank, caps what one round lends where the
// configuration asks for it.
func MayBorrow(used, total int64, share float64, borrowed, budget int64, running bool, since, now int64) bool {
	if running {
		used += now - since
		total += now - since
		borrowed += now - since
	}
	return float64(used) < share*float64(total) && borrowed < budget
}

// Unwanted calls refuse for every open mailbox (open[r]) but the primary
// rank's: a worker must not be sent threads it will not run, or they wait
// in its bank while a worker that wants them goes without (a mailbox
// opened in an earlier round or while idle would otherwise stay open).
// Mailboxes are opened again when the worker looks for work at that rank
// and has none.
func Unwanted(open []bool, primary int, refuse func(r int)) {
	for r, o := range open {
		if o && r != primary {
			refuse(r)
		}
	}
}

// Keep is how many threads a deal of bank r must leave to its sender: the
// youngest, when r is the rank next the sender runs next and that thread is
// not the running one (rank cur), since a worker never deals the thread it
// is about to run (invariant D1 of docs/design.md).
func Keep(r, next, cur int) int {
	if r == next && r != cur {
		return 1
	}
	return 0
}

// Victim picks a worker other than self among n > 1 from a random number.
func Victim(random uint64, self, n int) int {
	return int(random%uint64(n-1)+uint64(self)+1) % n
}

// AskVictim draws up to AskTries victims among n > 1 workers other than
// self, from draw's random numbers, and returns the first that asleep says
// is awake, or the last drawn.
func AskVictim(self, n int, draw func() uint64, asleep func(v int) bool) int {
	return drawVictim(self, n, draw, func(v int) bool { return !asleep(v) })
}

// DealVictim is the victim of a random deal (one that serves no request):
// up to AskTries draws among n > 1 workers other than self, the first that
// wants says would take the deal (a mailbox of the offered ranks is open:
// it sleeps, or donates for want of its primary rank), else the last
// drawn. With one draw, the few workers left idle after the others found
// work waited for a random deal to hit them, one chance in P-1 per deal,
// while threads waited in the banks of workers computing long leaves
// (simulator finding 6, docs/simulation.md).
func DealVictim(self, n int, draw func() uint64, wants func(v int) bool) int {
	return drawVictim(self, n, draw, wants)
}

// OpenVictim is the victim of a random deal when the runtime's index of
// open mailboxes names one: a worker other than self among n whose bit is
// set in the index's words (bit v%64 of word(v/64) for worker v; the
// caller ORs the index of each rank it may offer), the first at or after a
// random position, going round; -1 when none is set. A worker opens a
// mailbox when it sleeps (every rank) or donates for want of its primary
// rank, so the index names exactly the workers a deal can reach; it reads
// n/64 words, where DealVictim's draws find one of k such workers among n
// with probability about 4k/n, and after a barrier left the last few
// sleepers to chance while threads waited in the banks of workers computing
// long leaves (simulator finding 7, docs/simulation.md). The index is a
// hint, set by the owner as it opens a mailbox and cleared as it closes it
// or a sender claims it: the mailbox's own state decides the deal.
func OpenVictim(self, n int, random uint64, word func(i int) uint64) int {
	words := (n + 63) / 64
	start := int(random % uint64(n))
	first, off := start/64, uint(start%64)
	for k := 0; k <= words; k++ {
		i := (first + k) % words
		x := word(i)
		if i == self/64 {
			x &^= 1 << uint(self%64)
		}
		switch k {
		case 0:
			x &= ^uint64(0) << off
		case words:
			x &= 1<<off - 1
		}
		if x != 0 {
			return i*64 + bits.TrailingZeros64(x)
		}
	}
	return -1
}

// drawVictim draws up to AskTries victims, returning the first that want
// accepts, or the last drawn.
func drawVictim(self, n int, draw func() uint64, want func(v int) bool) int {
	v := Victim(draw(), self, n)
	for try := 1; try < AskTries && !want(v); try++ {
		v = Victim(draw(), self, n)
	}
	return v
}

// DealDue reports whether a pass through the scheduler deals: the deal
// interval is over (now at or after nextDeal), a request waits (requested),
// or the worker spreads (SpreadAfter).
func DealDue(now, nextDeal int64, requested, spreading bool) bool {
	return now >= nextDeal || requested || spreading
}

// Spreading reports whether a worker whose spreading ends at until (see
// SpreadAfter) spreads at now: it deals at every pass through the
// scheduler, ahead of its deal interval, and makes its next preemption
// point due.
func Spreading(until, now int64) bool { return now < until }

// SpreadAfter gives when a worker's spreading ends, after a pass through
// the scheduler at now that (while it spread until until) dealt: a deal of
// its filled another worker's open mailbox; found no taker: it had surplus
// to deal and no worker wanted it (OpenVictim found none, nor DealVictim's
// draws); received threads: a deal, or its inbox as it woke from sleep; or
// refused an idle worker's request for want of surplus. window is the deal
// interval.
//
// After a barrier every worker but one sleeps with its one request spent,
// and the forks of the busy one are lazy: they reach a bank only at a due
// preemption point, one per point, and a deal at most once a deal
// interval. Work then spread by a fork level per preemption point of the
// leaves (simulator finding 7,
// docs/simulation.md). A spreading worker makes every preemption point due:
// the heartbeat promotes its oldest fork, the next fork it pushes at the
// latest, and the pass deals it at once; its receiver spreads in turn, so
// the work reaches the sleepers in a tree, a fork level per deal and
// wake-up (microseconds). A worker that woke with work, or could not serve
// an idle worker's request, spreads too, so that the first fork it pushes
// (the next phase's, after a barrier) goes to a sleeper at once.
//
// Spreading ends at the first deal that finds no taker, or a window after
// the last event that started it. Each start follows a deal that filled an
// open mailbox, a wake-up with work or an idle worker's request, so it
// costs a few passes through the scheduler per mailbox opened or request
// posted: code that forks stops at its first due point once no worker
// wants work, code that does not fork passes through the scheduler at
// every point for one window at most.
func SpreadAfter(until, now, window int64, dealt, noTaker, received, refused bool) int64 {
	switch {
	case dealt || received || refused:
		return now + window
	case noTaker:
		return now
	}
	return until
}

// Request encodes a request for work of rank r in a request cell's rank
// field; anything says the asker is idle and takes any rank.
func Request(r int, anything bool) int {
	if anything {
		r |= AboveAll
	}
	return r
}

// RequestedRank decodes a request made by Request.
func RequestedRank(req int) (r int, anything bool) {
	return req &^ AboveAll, req&AboveAll != 0
}

// AsksForPrimary reports whether a worker that donates for want of its
// primary rank posts a request for it now: once per pass through the
// scheduler (asked says it did in this pass) and at most once a deal
// interval (nextAsk is when the last request's interval ends). Every post
// raises the asked worker's attention; two donating workers asking each
// other at every pass made each other pass through the scheduler at nearly
// every preemption point, and after DealsAfterRequest every such pass also
// made a random deal, which at P = 2 slowed a kernel at 50-25-25 in the top
// priority's idle rounds (docs/results.md at 04ac75d, "Asking for the
// primary priority once a deal interval"). The first request of an
// interval is still served at the asked worker's next point; repeating it
// within the interval mostly asked workers that had just had nothing to
// give.
func AsksForPrimary(asked bool, now, nextAsk int64) bool { return !asked && now >= nextAsk }

// DealsAfterRequest reports whether a deal that took a request from its
// request cell goes on to a random deal as if none had waited: when the
// request was for one rank (a worker donating for want of its primary
// rank, not an idle one) and this worker had none of it to give. Returning
// instead spent the deal on nothing: under a criterion whose top priority
// has little work, such as winner-take-all, every donating worker asks for
// that priority again and again, the busy workers' request cells are
// seldom empty, and the surplus they hold reached the workers that slept
// after a barrier only through their own requests, and at P = 128 sort
// and bfs ran slower at 100-0-0 than alone with no top-priority work at
// all (simulator finding 8, docs/simulation.md). An idle asker's
// request that could not be served says this worker has no surplus to deal
// at all.
func DealsAfterRequest(dealt, anything bool) bool { return !dealt && !anything }

// RequestOrder appends to dst the ranks a worker offers, one after the
// other until a deal succeeds, to a worker that asked for rank r: r itself,
// and for an idle asker (anything) the rank cur the sender runs, then every
// rank from top down.
func RequestOrder(dst []int, r int, anything bool, cur, top int) []int {
	dst = append(dst, r)
	if !anything {
		return dst
	}
	dst = append(dst, cur)
	for x := top; x >= 0; x-- {
		dst = append(dst, x)
	}
	return dst
}

// OfferOrder appends to dst the ranks of a random deal to a worker whose
// primary rank is targetPrimary: that rank first (the work it is supposed
// to run this round and may be missing), then the rank cur the sender runs
// (the paper's choice).
func OfferOrder(dst []int, targetPrimary, cur int) []int {
	return append(dst, targetPrimary, cur)
}

// SteerScore rates a worker as the destination of a thread of rank r that
// arrives from outside the workers (a submission, a resumed thread): one
// whose primary rank is r and that runs another rank (or nothing) first,
// then a sleeping one, then one with primary r, lower running ranks before
// higher ones; a worker that passed no preemption point for the stale bound
// comes last. running is the rank it runs (NoRank for none).
func SteerScore(r, running, primary int, asleep, stale bool) int {
	score := -running
	switch {
	case primary == r && running != r:
		score += scoreDonating
	case asleep:
		score += scoreAsleep
	case primary == r:
		score += scorePrimary
	}
	if !asleep && stale {
		score += scoreStale
	}
	return score
}

// Seizes reports whether a thread of rank r that becomes ready on a running
// goroutine (resumed after Await, Sleep or a blocked call) takes the token
// of a worker that runs thread code of a lower rank (running), at once,
// instead of queueing for the worker's next preemption point: when r is
// the worker's primary rank, or r may borrow the round (lends: r has a
// share and borrowing is on). The worker would switch to r at that point
// anyway, unless r had its share of the worker lately (MayBorrow), which the new
// holder's first point checks. Queueing costs a goroutine switch on top,
// and Go's wake-up of a spare OS thread for it made that switch slow with
// both cores busy (docs/results.md at 04ac75d, "A resumed thread takes its
// worker at once").
func Seizes(r, running, primary int, lends bool) bool {
	return running >= 0 && running < r && (primary == r || r > primary && lends)
}

// SteerRevokes reports whether the best steering score says every worker is
// stale: the chosen one's token is then revoked for the arriving thread.
func SteerRevokes(best int) bool { return best < revokeBelow }

// Steer is the worker among n that a thread from outside goes to: the one
// of the highest score (SteerScore), scanning from worker start%n round the
// ring, the first of equal ones; and its score. The caller moves start on
// at every call, so that ties rotate.
func Steer(n, start int, score func(v int) int) (v, best int) {
	v, best = -1, 0
	for i := range n {
		w := (start + i) % n
		if s := score(w); v < 0 || s > best {
			v, best = w, s
		}
	}
	return v, best
}

// Verdict is the watchdog's decision on a worker that passed no preemption
// point for some ticks.
type Verdict int

// Watchdog verdicts.
const (
	Wait          Verdict = iota // leave it
	RevokeBusy                   // revoke: someone waits, and its thread may compute
	RevokeBlocked                // revoke: nobody waits, but a whole round went by (it is blocked, most likely)
)

// RoundTicks is how many ticks of interrupt fit a round of quantum q, at
// least StallTicks.
func RoundTicks(q, interrupt int64) int { return max(StallTicks, int(q/interrupt)) }

// Watchdog decides about a worker that passed no preemption point for ticks
// ticks: demand says somebody waits for it (threads queued on it, a
// request, an idle worker, the end of its round).
func Watchdog(ticks, roundTicks int, demand bool) Verdict {
	switch {
	case ticks < StallTicks:
		return Wait
	case demand:
		return RevokeBusy
	case ticks >= roundTicks:
		return RevokeBlocked
	}
	return Wait
}

// Measured corrects a verdict of Watchdog with what the OS tells of the
// stuck thread, where it tells (known): a revocation is RevokeBusy if the
// thread computes and RevokeBlocked if it does not, whoever waits. The
// guess from demand alone cost a library call its P and its demotion after
// a round unasked.
func Measured(verdict Verdict, known, computing bool) Verdict {
	switch {
	case verdict == Wait || !known:
		return verdict
	case computing:
		return RevokeBusy
	}
	return RevokeBlocked
}

// WatchdogBelow is the below rank the watchdog revokes a stuck worker with,
// whose holder runs rank running while threads up to rank waiting (NoRank for
// none) wait in its banks, inbox or mailboxes: the waiting rank if it is
// higher, as that thread's arrival would revoke (a queued thread never
// arrives again, and RefuseRevoke would otherwise keep it behind a second
// library call of the worker's), else AboveAll.
func WatchdogBelow(waiting, running int) int {
	if waiting > running {
		return waiting
	}
	return AboveAll
}

// RefuseRevoke reports whether a revocation that would detach a goroutine
// computing at rank running is refused because the worker already has
// computing detached goroutines (detBusy of them, the highest at rank
// detTop): the watchdog (below == AboveAll) adds none at or below that
// level, and an arriving thread of rank below only if it is above every
// detached one, which it must not wait for (their calls may never end).
// busy says the goroutine to detach may compute; a blocked one costs no
// processor and is never refused.
func RefuseRevoke(busy bool, detBusy, running, detTop, below int) bool {
	above := below != AboveAll && below > detTop
	return busy && detBusy > 0 && running <= detTop && !above
}

// Poke reports whether the ticker raises the attention of the workers that
// compute every deal interval, until its next tick, rather than once a
// tick: while some worker sleeps (someAsleep) and some computes (someBusy),
// the computing ones hold lazy forks that reach their banks, and so the
// sleepers, only at a due preemption point, which in code that forks
// rarely is the tick. After a barrier the work would spread by a fork
// level per tick (simulator finding 1, docs/simulation.md).
func Poke(someAsleep, someBusy bool) bool { return someAsleep && someBusy }

// Promote reports whether a heartbeat promotes the oldest lazy fork of the
// running goroutine into its bank: with two workers or more, when the bank
// of its rank holds no live thread, so that a deal or request finds work.
func Promote(workers int, bankLive bool) bool { return workers >= 2 && !bankLive }

// Pace is the count of preemption points to the next pass through the
// scheduler, given the count before (every; 0 for CheckEvery) and the time
// since the last pass (gap): halved while passes come further apart than
// PassEvery, doubled back while they come closer than a quarter of it,
// within 1 and CheckEvery. Passes that the attention word hastened count
// as close ones: they only let the count grow back sooner.
func Pace(every int, gap int64) int {
	if every <= 0 {
		every = CheckEvery
	}
	switch {
	case gap > int64(PassEvery):
		return max(1, every/2)
	case gap < int64(PassEvery)/4:
		return min(CheckEvery, every*2)
	}
	return every
}
