package engine

import (
	goruntime "runtime"
	"sync/atomic"
	"unsafe"

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
//   - at a heartbeat: a preemption point that is due anyway (the attention
//     word is raised, or policy.CheckEvery points of the other kinds went by; see
//     policy.PollEvery for forks) promotes the
//     oldest lazy fork, the one of greatest fork potential, when the bank of
//     its priority is empty, so that a deal or a request finds work at once;
//   - when the goroutine stops running its thread (preemption, a Join that
//     must wait, Await, Sleep, Goexit): every lazy fork is promoted, since
//     the threads are ready and nobody else could run them;
//   - when a thread ends with shared forks it never joined: they are
//     promoted (private ones are left only by a panic, and dropped);
//   - when the goroutine's token is revoked (revoke.go): the revoker
//     promotes the shared ones (below) into the worker it took, because the
//     stuck thread may be blocked waiting for one of them.
//
// A goroutine has two lazy stacks. The shared one (lazyStack) holds the
// forks of Spawn: their parent may block on them outside fairly (a channel
// the child sends on), so a revoker must be able to take them, and push and
// take pay an atomic store and a compare-and-swap. The private one
// (Forks) holds the forks of thread.Fork2 and Join2, whose parent never
// waits for them before its own call returns: only the owner promotes
// them, so push and pop are plain writes into records prepared only when
// promoted, and a fork and join costs about a call. Heartbeats take the
// older bottom fork of the two stacks.
//
// The shared stack. Its slots are pushed only by the goroutine that owns
// the stack. Slot i holds the fork tasks[i] while state[i] is slotFull,
// until somebody takes it out by compare-and-swap of state[i] to
// slotEmpty: the owner to run it (take, takeAny), or to promote it. A
// revoker takes it by compare-and-swap to slotCopying instead, reads
// tasks[i] and then stores slotEmpty (lazySlots.claim): tasks is written
// by the owner alone, only at slots it saw or made empty, so every read of
// another goroutine is ordered after the write it reads (by the store of
// slotFull that it saw) and before the next one (by the store of
// slotEmpty that the owner saw). The slots' words are integers, so that
// push and take are inlined atomic instructions, not the calls of atomic
// pointers with their write barriers. Taking a fork out is the claim of a
// fork that was never shared: nobody claims such a fork in place
// (Task.claimHere). top, bot and floor are the owner's private indices:
// slots[:top] may hold forks, slots[:bot] hold none (a hint, so that a
// heartbeat does not scan from the bottom each time). A slot at or above
// top holds none: it is empty, or a revoker still copies its fork out.
// depths[i] is the fork depth of the fork pushed into slot i, kept by the
// owner, which must not read the depth of a task that another worker may
// be running.
//
// Invariants L1-L3 and L5 (PROTOCOLS.md): a fork runs exactly once, no
// fork is lost (the owner stores a fork and then loads its mode word, a
// revoker wins the swap of the mode word and then scans pub), the fast
// paths write no shared memory, and a private fork of a revoked goroutine
// stays on it.
type lazyStack struct {
	lazySlots // owner's view of pub
	depths    []int32
	pub       atomic.Pointer[lazySlots]
	top       int
	bot       int
	// floor is top when the innermost thread running on the goroutine
	// started: forks below it are its ancestors'. Pops never go below it,
	// so that the forks a thread leaves unjoined are found when it ends.
	floor int
}

// lazySlots is an array of shared slots: the fork of slot i is tasks[i]
// while state[i] says slotFull.
type lazySlots struct {
	state []atomic.Uint32
	tasks []*Task
}

// The states of a shared slot.
const (
	slotEmpty   uint32 = iota
	slotFull           // holds a fork
	slotCopying        // a revoker took the fork and reads it out
)

// full reports whether slot i holds a fork.
func (p *lazySlots) full(i int) bool { return p.state[i].Load() == slotFull }

// empty takes the fork of slot i out for the owner, if the slot still
// holds it, and gives it.
func (p *lazySlots) empty(i int) *Task {
	if !p.state[i].CompareAndSwap(slotFull, slotEmpty) {
		return nil
	}
	t := p.tasks[i]
	p.tasks[i] = nil
	return t
}

// claim takes the fork of slot i out for a revoker, if the slot still
// holds it, and gives it. The owner does not write tasks[i] before the
// slot is empty again, and the revoker leaves it as it is: only the owner
// writes tasks (L2a), and its next push there overwrites it. (The task
// left there is shared now, so never recycled into another fork.)
func (p *lazySlots) claim(i int) *Task {
	if !p.full(i) || !p.state[i].CompareAndSwap(slotFull, slotCopying) {
		return nil
	}
	t := p.tasks[i]
	p.state[i].Store(slotEmpty)
	return t
}

// push records t as the youngest lazy fork. Its caller then loads the
// mode word (L2).
func (s *lazyStack) push(t *Task) {
	i := s.top
	if i == len(s.tasks) || s.state[i].Load() != slotEmpty {
		s.room()
	}
	s.depths[i] = t.depth
	s.tasks[i] = t
	s.state[i].Store(slotFull)
	s.top = i + 1
}

// room makes slot top ready for a push: it grows the stack when it is
// full, and waits while a revoker still copies a fork out of the slot.
func (s *lazyStack) room() {
	if s.top == len(s.tasks) {
		s.grow()
	}
	for s.state[s.top].Load() != slotEmpty {
		goruntime.Gosched()
	}
}

// grow moves the forks into larger arrays. Each is taken out of the old
// one first, so that a revoker still scanning the old array cannot take a
// fork that the owner takes from the new one (a fork is in one slot only);
// a revoker that missed the move is seen by the owner's mode check after
// its push (the invariants above).
func (s *lazyStack) grow() {
	n := max(16, 2*len(s.tasks))
	p := &lazySlots{state: make([]atomic.Uint32, n), tasks: make([]*Task, n)}
	for i := range s.top {
		if t := s.empty(i); t != nil {
			p.tasks[i] = t
			p.state[i].Store(slotFull)
		}
	}
	s.lazySlots = *p
	s.depths = append(s.depths, make([]int32, n-len(s.depths))...)
	s.pub.Store(p)
}

// take takes t out of its slot if it is the youngest fork. It reports
// whether t was there: then the caller runs it, and nobody else can (L1: a
// fork that is neither shared nor submitted is run by whoever takes it out
// of its slot). It leaves the empty slots under t's (forks that a revoker
// took, or joined out of order) to the slow path, takeAny, which drops
// them, so that it inlines into JoinFork.
func (s *lazyStack) take(t *Task) bool {
	i := s.top - 1
	if i < s.floor || s.tasks[i] != t || !s.state[i].CompareAndSwap(slotFull, slotEmpty) {
		return false
	}
	s.tasks[i] = nil
	s.top = i
	s.bot = min(s.bot, i)
	return true
}

// takeAny is take for the slow path of a join: the fork may be joined out
// of order, or by a thread that runs on the goroutine above the one that
// forked it, so it looks for t in every slot under top.
func (s *lazyStack) takeAny(t *Task) bool {
	for i := s.top - 1; i >= 0; i-- {
		if s.tasks[i] == t {
			if s.empty(i) == nil {
				return false
			}
			s.drop()
			return true
		}
	}
	return false
}

// drop lowers top past slots that hold no fork. (A slot never holds a
// claimed fork: only a fork that left its slot is ever claimed, see
// claimHere.)
func (s *lazyStack) drop() {
	for s.top > s.floor && !s.full(s.top-1) {
		s.top--
	}
	s.bot = min(s.bot, s.top)
}

// JoinFork is the fast path of a Join of child by t, for package thread:
// if child is t's youngest shared fork and the attention word is down, it
// takes child out of its slot (take) and runs it inline on t's goroutine,
// without entering the scheduler unless child left shared forks unjoined
// (they are promoted), and reports true; else the caller joins child by
// Join, which passes the preemption point. Such a join does not count a
// point: the Spawn that made child counted one, so that paced passes come
// every policy.CheckEvery forks, not every half as many, while a raised
// attention word still stops the join. One call does both, so that the
// commonest join pays one call into the engine (take inlines) besides
// child's code.
//
// child's end is left to the caller: EndTaken ends it, unless the caller
// knows that nobody will ever look at child again (no handle call on it
// under way, and none to come), and then reuses its memory (Reinit)
// without ending it. So the commonest join, a fork of the parent's own
// stack that nobody else waits for, pays no atomic operation on child's
// end word (L1a, L9). A runtime.Goexit in child unwinds through the run
// that began the frames below it (exited).
func (t *Task) JoinFork(child *Task) bool {
	g := t.g
	if child.rank != t.rank || g.w.attn.Load() != 0 || !g.lazy.take(child) {
		return false
	}
	child.g = g
	g.begin(child)
	child.body.Run(child)
	if g.orphans() {
		g.endOrphaned(t)
	} else {
		g.end()
	}
	return true
}

// EndTaken ends child, which JoinFork ran: it marks child done and wakes
// its waiters.
func (t *Task) EndTaken(child *Task) { t.g.endTaken(t, child) }

// endOrphaned closes, for its parent t, the thread begun last, which left
// shared forks unjoined: they are promoted.
func (g *gor) endOrphaned(t *Task) {
	g.enter(t)
	g.promoteOrphans(g.w)
	g.end()
	g.leave()
}

// endTaken ends child, which JoinFork ran: a fork that nobody waits for and
// that was not submitted is one compare-and-swap (L9); else it ends by
// retire, in the scheduler.
func (g *gor) endTaken(t, child *Task) {
	if child.root || !child.endAlone() {
		g.enter(t)
		g.retire(child)
		g.leave()
	}
}

// Lazy is the record of a private lazy fork: thread.Fork2's second call,
// written into the record at its level of the goroutine's Forks and nothing
// else. Its task is prepared only if the fork is promoted, which is rare.
type Lazy interface {
	// Promote prepares the record's task as a fork of parent, the thread
	// that made it (its priority, its context), and returns the task. The
	// engine sets the task's depth.
	Promote(parent *Task) *Task
}

// Forks is a goroutine's stack of private lazy forks, the forks of
// thread.Fork2 and Join2. Only the goroutine itself pushes, pops and
// promotes them, so every operation is a plain read or write.
//
// slots[i] is the record of level i: slots[:top] are forks pushed and not
// yet popped, slots[top:] records free for reuse (nil where none was made
// yet). slots is always longer than top (init, Install), so that NextFork
// reads slots[top] without a length check, which would take it over the
// inlining budget, and even without the bounds check of an index. Forks
// are promoted oldest first, from bot up: slots[:bot] were
// promoted and are nil (the record of a promoted fork belongs to its task
// now), while slots[bot:top] are forks still to be taken, none nil. So a
// fork of level i was promoted exactly when i < bot, and a pop reads no
// slot. floor is top when the innermost thread running on the goroutine
// started: the forks below it are its ancestors', and its own forks are
// slots[floor:top].
//
// The fast path of a fork (thread.Fork2): NextFork gives the record free
// at level top while no preemption point is due, the caller writes the
// function and the argument into it, Push raises top; after the first
// call, Pop lowers top again if the fork was not promoted. No record is
// initialised, no depth or context copied, nothing deferred; a countdown
// (policy.PollEvery) is the only other write, and the attention word the
// only word read that another goroutine writes.
//
// Invariants L4 and L6-L8 (PROTOCOLS.md): a private fork runs exactly
// once, a level's record is its own when its Fork2 pops, a panic needs no
// defer, and promotion stays oldest-first.
type Forks struct {
	g               *gor
	slots           []Lazy
	top, bot, floor int
	// polls counts the polls of forks and loop iterations down to a pass
	// through the scheduler (policy.PollEvery).
	polls int
}

// Forks is the stack of private forks of the goroutine that runs t.
func (t *Task) Forks() *Forks { return &t.g.priv }

// NextFork gives the stack of private forks of the goroutine that runs t,
// the level of the next fork, and the record free at that level if no
// preemption point is due, else nil: the caller then takes the slow path
// (Free, Install, Push and Point). The attention word is raised by the
// ticker every interrupt, by work requests and deals, and by a revoker;
// the countdown (policy.PollEvery) paces the offers of the OS processor,
// and where it runs out Point also reads the mode word, so that a
// goroutine whose token was revoked comes back within PollEvery forks
// even if the new holder of its worker lowered the attention word first.
// The count's sign bit joins the attention word in one test: one branch
// fewer than two tests, and no read of the mode word, on every fork.
func (t *Task) NextFork() (s *Forks, level int, free Lazy) {
	g := t.g
	s = &g.priv
	level = s.top
	n := s.polls - 1
	s.polls = n
	if g.w.attn.Load()|uint32(uint64(n-1)>>63) == 0 { // attention down and n > 0
		// slots is longer than top (see Forks): no bounds check.
		free = *(*Lazy)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.slots)), uintptr(level)*unsafe.Sizeof(free)))
	}
	return s, level, free
}

// Free gives the record free at the next level, nil if none; it is
// NextFork's for the slow path, whatever is due.
func (s *Forks) Free() Lazy { return s.slots[s.top] }

// Push makes the record at the next level, written by the caller, the
// youngest fork.
func (s *Forks) Push() { s.top++ }

// Pop takes back the fork of level if it was not promoted, and drops the
// forks above it, left by a panic that the thread recovered (their first
// call never returned; none of them was promoted either, since promotion
// goes oldest first): then the caller runs the fork inline. Otherwise the
// caller calls Take. One comparison, as Take would decide.
func (s *Forks) Pop(level int) bool {
	if s.bot <= level {
		s.top = level
		return true
	}
	return false
}

// Take is Pop's slow path. It drops the forks above level, left by a panic
// that the thread recovered (their first call never returned), and reports
// whether the fork of level is still there: if not, it was promoted, and
// the caller joins its task.
func (s *Forks) Take(level int) bool {
	promoted := level < s.bot
	s.top = level
	s.bot = min(s.bot, level)
	return !promoted
}

// Install makes r the record of the next level, for a level that has none
// or one of other types. It keeps a slot above the level, for the level
// after the Push.
func (s *Forks) Install(r Lazy) {
	if s.top+1 == len(s.slots) {
		s.slots = append(s.slots, nil)
	}
	s.slots[s.top] = r
}

// init prepares the stack of goroutine g.
func (s *Forks) init(g *gor) {
	s.g = g
	s.slots = make([]Lazy, 1)
}

// Point passes the preemption point of a fork that t just pushed, when
// NextFork found one due: the heartbeat there may promote the oldest fork. It also
// brings back a goroutine whose token was revoked.
func (s *Forks) Point(t *Task) {
	g := s.g
	if attn := g.w.attn.Load() != 0; attn || g.mode.Load()&modeRevoked != 0 {
		g.forked(t, attn)
		return
	}
	if s.polls <= 0 {
		// Only the count ran out: offer the OS processor when it is time,
		// and move off a core shared with another worker, as service
		// does, without a pass and its heartbeat, which would promote
		// forks that nobody asked for; but pass if the round is over, as
		// a paced preemption point does (checkpoint). roundEnd, not the
		// owner's nextRound: the token may have been revoked since the
		// test of the mode word.
		s.polls = policy.PollEvery
		now := g.rt.now()
		if now >= g.w.roundEnd.Load() {
			g.forked(t, true)
			return
		}
		if now >= g.nextYield {
			g.nextYield = now + int64(policy.OSYieldEvery)
			g.w.yieldOS(int(t.rank))
		}
	}
}

// nesting is how many private forks the running thread has pending: the
// calls it runs now are that much deeper in its fork tree, for the depth
// of the threads it forks.
func (g *gor) nesting() int32 { return int32(g.priv.top - g.priv.floor) }

// owner is the thread that pushed private fork i and the floor of its
// forks: the innermost running thread whose floor is at most i.
func (g *gor) owner(i int) (*Task, int) {
	floor := g.priv.floor
	k := len(g.frames) - 1
	for ; k > 0 && i < floor; k-- {
		floor = g.frames[k].saved.private
	}
	return g.frames[k].t, floor
}

// promotePriv promotes private fork i into w.
func (g *gor) promotePriv(w *worker, i int) {
	l := g.priv.slots[i]
	g.priv.slots[i] = nil
	parent, floor := g.owner(i)
	t := l.Promote(parent)
	t.depth = parent.depth + int32(i-floor) + 1
	w.promoted(t)
}

// floors are the floors of both lazy stacks, saved while a thread runs
// inside another on the same goroutine.
type floors struct{ shared, private int }

// frame is a thread running on a goroutine, and the floors of the thread
// it runs inside.
type frame struct {
	t     *Task
	saved floors
}

// begin marks the start of thread t on the goroutine.
func (g *gor) begin(t *Task) {
	g.frames = append(g.frames, frame{t, floors{g.lazy.floor, g.priv.floor}})
	g.lazy.floor, g.priv.floor = g.lazy.top, g.priv.top
}

// orphans reports whether the thread that runs now may have left shared
// forks unjoined. (Private forks above its floor are left only by a panic,
// and dropped by end.)
func (g *gor) orphans() bool { return g.lazy.floor < g.lazy.top }

// end closes the thread begun last, whose shared forks must all be taken
// by now (promoteOrphans). Its private forks still pushed are dropped:
// their first call panicked or exited (see Forks).
func (g *gor) end() {
	s, p := &g.lazy, &g.priv
	s.top, p.top = s.floor, p.floor
	s.bot, p.bot = min(s.bot, s.top), min(p.bot, p.top)
	n := len(g.frames) - 1
	saved := g.frames[n].saved
	g.frames[n] = frame{}
	g.frames = g.frames[:n]
	s.floor, p.floor = saved.shared, saved.private
}

// promoteShared promotes into w the shared forks still in the slots
// [from, to).
func (g *gor) promoteShared(w *worker, from, to int) {
	for i := from; i < to; i++ {
		if g.lazy.full(i) {
			if t := g.lazy.empty(i); t != nil {
				w.promoted(t)
			}
		}
	}
}

// promoteOrphans promotes into w the shared forks that the thread running
// now leaves unjoined; w is owned by the caller.
func (g *gor) promoteOrphans(w *worker) {
	g.promoteShared(w, g.lazy.floor, g.lazy.top)
}

// promoteAll promotes into w every lazy fork of g: g is about to park, and
// its forks are ready threads that nobody else could run meanwhile. The
// threads on g find them claimed or shared when they resume.
func (g *gor) promoteAll(w *worker) {
	g.promoteShared(w, g.lazy.bot, g.lazy.top)
	g.lazy.bot = g.lazy.top
	for p := &g.priv; p.bot < p.top; p.bot++ {
		g.promotePriv(w, p.bot)
	}
}

// abandon is promoteAll for a goroutine that exits by runtime.Goexit: the
// private forks are dropped with the frames of the Fork2 calls that made
// them, as a panic drops them.
func (g *gor) abandon(w *worker) {
	g.priv.top, g.priv.bot = 0, 0
	g.promoteAll(w)
}

// heartbeat keeps one real thread of the running priority in the bank when
// the goroutine has lazy forks: at every due preemption point (the
// attention word raised, or policy.CheckEvery points of the other kinds), if the
// bank of that priority is empty, it promotes the oldest lazy fork of the
// two stacks, the one of greatest fork potential. A deal or a request then
// finds work at once, while forks pay for a bank only when work is wanted.
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
		if s.full(s.bot) {
			shared = s.tasks[s.bot]
			break
		}
	}
	priv := p.bot < p.top
	if priv && shared != nil {
		owner, floor := g.owner(p.bot)
		priv = owner.depth+int32(p.bot-floor)+1 < s.depths[s.bot]
	}
	switch {
	case priv:
		if owner, _ := g.owner(p.bot); policy.Promote(len(w.rt.workers), w.hasLive(int(owner.rank))) {
			g.promotePriv(w, p.bot)
			p.bot++
		}
	case shared != nil:
		if policy.Promote(len(w.rt.workers), w.hasLive(int(shared.rank))) && s.empty(s.bot) != nil {
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
	for i := range p.state {
		if t := p.claim(i); t != nil {
			w.promoted(t)
		}
	}
}

// Recycled keeps, for one goroutine, the records of finished threads that
// package thread may reuse for the threads it spawns next: a record whose
// handle was joined costs the next Spawn no allocation. Only the goroutine
// itself uses it, with plain reads and writes. Records are taken from the
// top, and a spawn of another type of record finds none there and
// allocates, so a recursion that spawns and joins one type reuses the
// records at every level.
type Recycled struct{ recs []any }

// maxRecycled bounds the records a goroutine keeps: a fork-join recursion
// needs one a level of its depth, and more would only hold memory.
const maxRecycled = 64

// Recycled is the pool of records of the goroutine that runs t.
func (t *Task) Recycled() *Recycled { return &t.g.recycled }

// Top is the record that Pop would take, nil if none.
func (s *Recycled) Top() any {
	if n := len(s.recs); n > 0 {
		return s.recs[n-1]
	}
	return nil
}

// Pop drops the top record, which the caller took from Top.
func (s *Recycled) Pop() {
	n := len(s.recs) - 1
	s.recs[n] = nil
	s.recs = s.recs[:n]
}

// Push keeps r for a later spawn, unless maxRecycled are kept already.
func (s *Recycled) Push(r any) {
	if len(s.recs) < maxRecycled {
		s.recs = append(s.recs, r)
	}
}
