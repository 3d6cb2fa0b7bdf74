package runtime

import "sync/atomic"

// Lazy forks: a spawn that costs next to nothing.
//
// A thread forked at its parent's priority does not enter a bank. It is
// pushed on the lazy stack of the goroutine that runs the parent, and in the
// common case the parent joins it before anybody else wanted it: Join pops
// it and calls it inline, and the fork never cost a bank operation, a mode
// change or a shared write. A lazy fork becomes a real thread of the bank
// (it is promoted) only when work is wanted elsewhere, as in heartbeat
// scheduling (Acar et al., PLDI 2018):
//
//   - at a heartbeat: a preemption point that is due anyway (every
//     checkEvery points or when the attention word is raised) promotes the
//     oldest lazy fork, the one of greatest fork potential, when a deal is
//     due or a worker asked for work and the bank of that priority is empty;
//   - when the goroutine stops running its thread (preemption, a Join that
//     must wait, Await, Sleep, Goexit): every lazy fork is promoted, since
//     the threads are ready and nobody else could run them;
//   - when a thread ends with forks it never joined: they are promoted;
//   - when the goroutine's token is revoked (revoke.go): the revoker
//     promotes them into the worker it took, because the stuck thread may be
//     blocked waiting for one of them.
//
// The stack. slots is written only by the goroutine that owns the stack;
// top and bot are its private indices: slots[bot:top] are the forks not
// promoted by the owner, slots[:bot] ones it promoted (they stay until
// popped). A slot holds a task until it is overwritten; whether a task in
// a slot is still to run is decided by its claimed flag, never by the slot.
//
// Invariants, and why they hold:
//   - A fork runs exactly once. Every path that runs a task (an inline Join,
//     a worker taking it from a bank) first claims it by compare-and-swap;
//     promotion only inserts it into a bank, so a task promoted twice (by
//     its owner and by a revoker) leaves a stale entry that the loser's
//     claim skips.
//   - No fork is lost. A lazy fork is reachable from the slots until it was
//     claimed. Its owner promotes every unclaimed fork before it parks or
//     ends the thread that made it. A revoker reads the slots through the
//     published array (atomic loads) after winning the compare-and-swap on
//     the owner's mode word; the owner stores a fork into its slot (a
//     sequentially consistent store) and then loads its mode word. Of two
//     sequentially consistent accesses pairs, one sees the other: either
//     the revoker sees the fork, or the owner sees modeRevoked and takes the
//     slow path, which gives the fork to the runtime with the thread.
//   - The fast paths write only the owner's slots and the forked task, which
//     no other worker touches until promotion: nothing on a fork or join
//     that is never promoted writes memory shared with other workers.
type lazyStack struct {
	slots []atomic.Pointer[Task] // owner's view of pub
	pub   atomic.Pointer[[]atomic.Pointer[Task]]
	top   int // slots[:top] may hold forks to run
	bot   int // slots[:bot] were promoted by the owner
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
	s.slots[s.top].Store(t)
	s.top++
}

func (s *lazyStack) grow() {
	slots := make([]atomic.Pointer[Task], max(16, 2*len(s.slots)))
	for i := range s.top {
		slots[i].Store(s.slots[i].Load())
	}
	s.slots = slots
	s.pub.Store(&slots)
}

// pop forgets t, which was just claimed, if it is the youngest fork, and
// then any forks under it that were claimed meanwhile (joined out of order,
// or run by another worker after promotion).
func (s *lazyStack) pop(t *Task) {
	if s.top > s.floor && s.slots[s.top-1].Load() == t {
		s.top--
	}
	for s.top > s.floor && s.slots[s.top-1].Load().claimed.Load() {
		s.top--
	}
	s.bot = min(s.bot, s.top)
}

// begin marks the start of a thread on the goroutine; it returns the floor
// to give back to end.
func (s *lazyStack) begin() int {
	saved := s.floor
	s.floor = s.top
	return saved
}

// orphans reports whether the thread that runs now left forks unjoined that
// nobody has promoted.
func (s *lazyStack) orphans() bool { return max(s.floor, s.bot) < s.top }

// end closes the thread begun with begin, whose forks must all be claimed
// or promoted by now.
func (s *lazyStack) end(saved int) {
	s.top = s.floor
	s.bot = min(s.bot, s.top)
	s.floor = saved
}

// oldest gives the oldest fork that is neither promoted by the owner nor
// claimed, and marks it promoted.
func (s *lazyStack) oldest() (*Task, bool) {
	for s.bot < s.top {
		t := s.slots[s.bot].Load()
		s.bot++
		if !t.claimed.Load() {
			return t, true
		}
	}
	return nil, false
}

// promoteOrphans promotes into w the forks that the thread running now
// leaves unjoined; w is owned by the caller.
func (g *gor) promoteOrphans(w *worker) {
	s := &g.lazy
	for i := max(s.floor, s.bot); i < s.top; i++ {
		if t := s.slots[i].Load(); !t.claimed.Load() {
			w.promoted(t)
		}
	}
	s.bot = max(s.bot, s.top)
}

// promoteAll promotes into w every lazy fork of g: g is about to park, and
// its forks are ready threads that nobody else could run meanwhile. They
// keep their slots, so that the threads on g find them when they resume.
func (g *gor) promoteAll(w *worker) {
	s := &g.lazy
	for i := s.bot; i < s.top; i++ {
		if t := s.slots[i].Load(); !t.claimed.Load() {
			w.promoted(t)
		}
	}
	s.bot = s.top
}

// heartbeat promotes g's oldest lazy fork when work is wanted: a deal is
// due or was asked for, and the bank of that fork's priority is empty, so
// the deal would have nothing to give. One fork per heartbeat is enough:
// the oldest carries the most work (the greatest fork potential). With no
// lazy fork to give, it raises g.wanted instead, for code that can make
// work on demand (a parallel loop splits its range, see Task.Wanted).
func (g *gor) heartbeat(w *worker, now int64) {
	if len(w.rt.workers) < 2 || now < w.nextDeal && !w.requests.Pending() {
		return
	}
	t, ok := g.lazy.oldest()
	switch {
	case !ok:
		g.wanted = w.cur >= 0 && w.live(w.cur) == 0
	case w.live(int(t.rank)) == 0:
		w.promoted(t)
	default:
		g.lazy.bot-- // keep it lazy: the bank has work to deal
	}
}

// live drops the stale entries of bank r (forks promoted and then joined
// inline by their parent, which cannot touch the bank) and gives how many
// threads remain.
func (w *worker) live(r int) int {
	b := &w.banks[r]
	if b.Len() > 0 {
		b.Prune(func(it item) bool { return it.g != nil || !it.t.claimed.Load() })
	}
	return b.Len()
}

// promoted inserts lazy fork t into w's banks.
func (w *worker) promoted(t *Task) {
	w.stats.promotions.Add(1)
	w.insert(item{t: t})
}

// takeLazy promotes into w, which the caller took from h by revocation,
// every lazy fork of h that is not claimed. h may be running and pushing or
// popping meanwhile: see the invariants above.
func (w *worker) takeLazy(h *gor) {
	p := h.lazy.pub.Load()
	if p == nil {
		return
	}
	for i := range *p {
		if t := (*p)[i].Load(); t != nil && !t.claimed.Load() {
			w.promoted(t)
		}
	}
}
