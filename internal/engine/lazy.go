package engine

import (
	"sync/atomic"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Lazy forks: a spawn that costs next to nothing.
//
// A thread forked at its parent's priority does not enter a bank. It is
// pushed on a lazy stack of the goroutine that runs the parent, and in the
// common case the parent joins it before anybody else wanted it: Join pops
// it and calls it inline, and the fork never cost a bank operation, a mode
// change or a write to memory that other workers use. A lazy fork becomes a
// real thread of the bank (it is promoted) only when work is wanted
// elsewhere, as in heartbeat scheduling (Acar et al., PLDI 2018):
//
//   - at a heartbeat: a preemption point that is due anyway (every
//     checkEvery points or when the attention word is raised) promotes the
//     oldest lazy fork, the one of greatest fork potential, when the bank of
//     its priority is empty, so that a deal or a request finds work at once;
//   - when the goroutine stops running its thread (preemption, a Join that
//     must wait, Await, Sleep, Goexit): every lazy fork is promoted, since
//     the threads are ready and nobody else could run them;
//   - when a thread ends with forks it never joined: they are promoted;
//   - when the goroutine's token is revoked (revoke.go): the revoker
//     promotes the shared ones (below) into the worker it took, because the
//     stuck thread may be blocked waiting for one of them.
//
// A goroutine has two lazy stacks. The shared one (lazyStack) holds the
// forks of Spawn: their parent may block on them outside fairly (a channel
// the child sends on), so a revoker must be able to take them, and push and
// take pay an atomic store and a compare-and-swap. The private one
// (privStack) holds the forks of Task.Fork (thread.Fork2), whose parent
// never waits for them before its own call returns: only the owner promotes
// them, so push and take are plain writes, and a fork and join costs a few
// nanoseconds. Heartbeats take the older bottom fork of the two stacks.
//
// The shared stack. slots is pushed only by the goroutine that owns the stack; a
// slot holds a fork until somebody takes it out by compare-and-swap to nil:
// the owner to run it inline (take), or the owner or a revoker to promote
// it. top, bot and floor are the owner's private indices: slots[:top] may
// hold forks, slots[:bot] hold none that is not claimed (a hint, so that a
// heartbeat does not scan from the bottom each time). A slot at or above
// top holds nil or a claimed task. depths[i] is the fork depth of the fork
// pushed into slots[i], kept by the owner, which must not read the depth of
// a task that another worker may be running.
//
// Invariants, and why they hold:
//   - A fork runs exactly once. Taking it out of its slot is a
//     compare-and-swap, so one party gets it: the owner, who runs it inline
//     and never shares it, or
//     a promoter, who marks it shared and puts it into a bank, where every
//     runner claims it by compare-and-swap on its state first (Task.claim).
//     A fork joined out of order is claimed in place and its slot goes
//     stale: promoters skip claimed tasks. A private fork is in one slot
//     that only its owner reads and writes: it leaves it once, to be run
//     inline (take) or promoted.
//   - No fork is lost. A fork is in its slot until taken. Its owner promotes
//     every fork still in a slot before it parks or ends the thread that
//     made it (pops never go below the floor of the thread running now, so
//     the forks a thread leaves unjoined are still found when it ends). A
//     revoker scans the slots through the published array after winning the
//     compare-and-swap on the owner's mode word, while the owner stores a
//     fork into its slot and then loads its mode word. Both pairs are
//     sequentially consistent, so either the revoker sees the fork, or the
//     owner sees modeRevoked and takes the slow path, which gives the fork
//     to the runtime with its thread. A private fork of a revoked goroutine
//     stays on it: its parent's call returns before anything waits for it,
//     and the goroutine promotes it or runs it when it comes back.
//   - The fast paths write only the owner's slots, which no other worker
//     touches until a revocation (the private ones, never): a fork and join
//     that is never promoted writes no memory shared with other workers.
type lazyStack struct {
	slots  []atomic.Pointer[Task] // owner's view of pub
	depths []int32
	pub    atomic.Pointer[[]atomic.Pointer[Task]]
	top    int
	bot    int
	// floor is top when the innermost thread running on the goroutine
	// started: forks below it are its ancestors'. Pops never go below it,
	// so that the forks a thread leaves unjoined are found when it ends.
	floor int
}

// push records t as the youngest lazy fork.
func (s *lazyStack) push(t *Task) {
	if s.top == len(s.slots) {
		s.grow()
	}
	s.depths[s.top] = t.depth
	s.slots[s.top].Store(t)
	s.top++
}

// grow moves the forks into a larger array. Each is swapped out of the old
// one, so that a revoker still scanning the old array cannot take a fork
// that the owner takes from the new one (a fork is in one slot only); a
// revoker that missed the move is seen by the owner's mode check after its
// push (the invariants above).
func (s *lazyStack) grow() {
	slots := make([]atomic.Pointer[Task], max(16, 2*len(s.slots)))
	for i := range s.top {
		slots[i].Store(s.slots[i].Swap(nil))
	}
	s.slots = slots
	s.depths = append(s.depths, make([]int32, len(slots)-len(s.depths))...)
	s.pub.Store(&slots)
}

// take takes t out of its slot if it is the youngest fork, then drops the
// empty and claimed slots under it. It reports whether t was there: then
// nobody else has seen it, and the caller runs it.
func (s *lazyStack) take(t *Task) bool {
	i := s.top - 1
	if i < s.floor || s.slots[i].Load() != t || !s.slots[i].CompareAndSwap(t, nil) {
		return false
	}
	s.top = i
	s.drop()
	return true
}

// drop lowers top past slots that hold nothing left to run.
func (s *lazyStack) drop() {
	for s.top > s.floor {
		if t := s.slots[s.top-1].Load(); t != nil && !t.claimed() {
			break
		}
		s.top--
	}
	s.bot = min(s.bot, s.top)
}

// privStack is the private lazy stack: forks of Task.Fork, which only the
// owner pushes, takes and promotes. slots[:top] may hold forks,
// slots[:bot] hold none (promoted slots are nil), and pops never go below
// floor, as in lazyStack.
type privStack struct {
	slots           []*Task
	top, bot, floor int
}

// push records t as the youngest private fork.
func (s *privStack) push(t *Task) {
	if s.top == len(s.slots) {
		s.slots = append(s.slots, t)
	} else {
		s.slots[s.top] = t
	}
	s.top++
}

// take takes t out of its slot if it is the youngest fork; either way it
// drops the empty slots on top, which forks promoted meanwhile left.
func (s *privStack) take(t *Task) bool {
	ok := false
	if i := s.top - 1; i >= s.floor && s.slots[i] == t {
		s.slots[i] = nil
		s.top = i
		ok = true
	}
	for s.top > s.floor && s.slots[s.top-1] == nil {
		s.top--
	}
	s.bot = min(s.bot, s.top)
	return ok
}

// floors are the floors of both lazy stacks, saved while a thread runs
// inside another on the same goroutine.
type floors struct{ shared, private int }

// begin marks the start of a thread on the goroutine; it returns the floors
// to give back to end.
func (g *gor) begin() floors {
	saved := floors{g.lazy.floor, g.priv.floor}
	g.lazy.floor, g.priv.floor = g.lazy.top, g.priv.top
	return saved
}

// orphans reports whether the thread that runs now may have left forks
// unjoined.
func (g *gor) orphans() bool { return g.lazy.floor < g.lazy.top || g.priv.floor < g.priv.top }

// end closes the thread begun with begin, whose forks must all be taken by
// now (promoteOrphans).
func (g *gor) end(saved floors) {
	s, p := &g.lazy, &g.priv
	s.top, p.top = s.floor, p.floor
	s.bot, p.bot = min(s.bot, s.top), min(p.bot, p.top)
	s.floor, p.floor = saved.shared, saved.private
}

// promoteRange promotes into w the forks still in the slots [from, to) of
// both stacks.
func (g *gor) promoteRange(w *worker, from floors, to floors) {
	for i := from.shared; i < to.shared; i++ {
		if t := g.lazy.slots[i].Load(); t != nil && g.lazy.slots[i].CompareAndSwap(t, nil) {
			w.promoted(t)
		}
	}
	for i := from.private; i < to.private; i++ {
		if t := g.priv.slots[i]; t != nil {
			g.priv.slots[i] = nil
			w.promoted(t)
		}
	}
}

// promoteOrphans promotes into w the forks that the thread running now
// leaves unjoined; w is owned by the caller.
func (g *gor) promoteOrphans(w *worker) {
	g.promoteRange(w, floors{g.lazy.floor, g.priv.floor}, floors{g.lazy.top, g.priv.top})
}

// promoteAll promotes into w every lazy fork of g: g is about to park, and
// its forks are ready threads that nobody else could run meanwhile. The
// threads on g find them claimed or shared when they resume.
func (g *gor) promoteAll(w *worker) {
	g.promoteRange(w, floors{g.lazy.bot, g.priv.bot}, floors{g.lazy.top, g.priv.top})
	g.lazy.bot, g.priv.bot = g.lazy.top, g.priv.top
}

// heartbeat keeps one real thread of the running priority in the bank when
// the goroutine has lazy forks: at every due preemption point (every
// checkEvery points, or when the attention word is raised), if the bank of
// that priority is empty, it promotes the oldest lazy fork of the two
// stacks, the one of greatest fork potential. A deal or a request then
// finds work at once, while at most one fork in checkEvery pays for a bank.
// With no lazy fork to give, and a deal due or asked for, it raises
// g.wanted instead, for code that can make work on demand (a parallel loop
// splits its range, see Task.Wanted).
func (g *gor) heartbeat(w *worker, now int64) {
	if len(w.rt.workers) < 2 { // nobody to take work: skip the scan
		return
	}
	s, p := &g.lazy, &g.priv
	var shared *Task
	for ; s.bot < s.top; s.bot++ {
		if t := s.slots[s.bot].Load(); t != nil && !t.claimed() {
			shared = t
			break
		}
	}
	for p.bot < p.top && p.slots[p.bot] == nil {
		p.bot++
	}
	switch {
	case p.bot < p.top && (shared == nil || p.slots[p.bot].depth < s.depths[s.bot]):
		if t := p.slots[p.bot]; policy.Promote(len(w.rt.workers), w.hasLive(int(t.rank))) {
			p.slots[p.bot] = nil
			p.bot++
			w.promoted(t)
		}
	case shared != nil:
		if policy.Promote(len(w.rt.workers), w.hasLive(int(shared.rank))) && s.slots[s.bot].CompareAndSwap(shared, nil) {
			w.promoted(shared)
			s.bot++
		}
	case now >= w.nextDeal || w.requests.Pending():
		g.wanted = w.cur >= 0 && !w.hasLive(w.cur)
	}
}

// live drops the stale entries of bank r (forks promoted and then joined
// inline by their parent, which cannot touch the bank) and gives how many
// threads remain. Deals call it, so stale entries do not pile up.
func (w *worker) live(r int) int {
	b := &w.banks[r]
	if b.Len() > 0 {
		b.Prune(isLive)
	}
	return b.Len()
}

// hasLive reports whether bank r holds a thread still to run, without
// pruning: heartbeats ask at every due point, and stop at the first one.
func (w *worker) hasLive(r int) bool { return w.banks[r].Any(isLive) }

// isLive says a bank entry is still to run: a continuation, or a thread
// nobody claimed.
func isLive(it item) bool { return it.g != nil || !it.t.claimed() }

// promoted inserts lazy fork t into w's banks, unless it was claimed.
func (w *worker) promoted(t *Task) {
	if t.share() {
		w.stats.promotions.Add(1)
		w.insert(item{t: t})
	}
}

// takeLazy promotes into w, which the caller took from h by revocation,
// every lazy fork still in h's slots. h may be running and pushing or
// taking meanwhile: see the invariants above.
func (w *worker) takeLazy(h *gor) {
	p := h.lazy.pub.Load()
	if p == nil {
		return
	}
	for i := range *p {
		if t := (*p)[i].Load(); t != nil && (*p)[i].CompareAndSwap(t, nil) {
			w.promoted(t)
		}
	}
}
