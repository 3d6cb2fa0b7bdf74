// Package fairness describes priorities and how processor time is divided among them.
//
// Priorities form a partial order (an [Order]) with a greatest element, Top, and a least
// element, Bottom. Once an order is frozen, scheduling uses a deterministic topological total
// order consistent with it, so every priority gets a rank. A [Criterion] assigns each rank a
// share of processor time; workers draw the priority of each scheduling round from that
// distribution with a per-worker [Sampler].
package fairness

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Sentinel errors. Returned errors wrap them with the names involved; test with errors.Is.
var (
	// ErrCycle reports an ordering declaration that would contradict the existing order.
	ErrCycle = errors.New("fairness: priority cycle")
	// ErrForeignPriority reports a zero priority, a priority of another order, or a priority
	// without a rank where one is needed.
	ErrForeignPriority = errors.New("fairness: foreign priority")
	// ErrFrozen reports a change to an order that has been frozen.
	ErrFrozen = errors.New("fairness: order is frozen")
	// ErrNegativeWeight reports a weight that is negative, NaN or infinite.
	ErrNegativeWeight = errors.New("fairness: weight must be finite and non-negative")
	// ErrZeroWeights reports a criterion whose weights are all zero.
	ErrZeroWeights = errors.New("fairness: all weights are zero")
)

// The built-in priorities are created first by NewOrder.
const (
	bottomID int32 = 0
	topID    int32 = 1
)

// Priority names one priority of an [Order]. It is a small comparable value, usable as a map
// key. The zero Priority belongs to no order and is invalid.
type Priority struct {
	o  *Order
	id int32
}

// IsZero reports whether p is the zero (invalid) Priority.
func (p Priority) IsZero() bool { return p.o == nil }

// Order returns the order p belongs to, or nil for the zero Priority.
func (p Priority) Order() *Order { return p.o }

// String returns the name p was created with; "top" and "bottom" for the built-ins.
func (p Priority) String() string {
	if p.o == nil {
		return "<invalid priority>"
	}
	p.o.lock()
	defer p.o.mu.Unlock()
	return p.o.names[p.id]
}

// Order is a partial order of priorities with a greatest element (Top) and a least element
// (Bottom). Its methods are safe for concurrent use. After [Order.Freeze], Rank and LessEq
// read an immutable snapshot without locking.
type Order struct {
	mu    sync.Mutex
	names []string  // by id
	up    [][]int32 // up[a] holds every b declared with Less(a, b); Top and Bottom edges are implicit
	snap  atomic.Pointer[snapshot]
}

// snapshot is the immutable view published by Freeze.
type snapshot struct {
	order []Priority // lowest first
	rank  []int32    // by id; ids created after Freeze are out of range
	reach [][]uint64 // reach[r] is the bitset of ranks s with order[r] ⪯ order[s]
}

// NewOrder returns an order holding only Top and Bottom, Bottom < Top. The
// zero value of Order is the same empty order, ready to use.
func NewOrder() *Order {
	o := &Order{}
	o.lock()
	o.mu.Unlock()
	return o
}

// lock takes o's lock, first giving a zero Order its Top and Bottom.
func (o *Order) lock() {
	o.mu.Lock()
	if o.names == nil {
		o.names = []string{bottomID: "bottom", topID: "top"}
		o.up = make([][]int32, 2)
	}
}

// Top returns the greatest priority of o.
func (o *Order) Top() Priority { return Priority{o, topID} }

// Bottom returns the least priority of o.
func (o *Order) Bottom() Priority { return Priority{o, bottomID} }

// New creates a priority with Bottom < p < Top. Priorities created after [Order.Freeze]
// exist and compare with LessEq, but have no rank, so a criterion cannot give them a share.
func (o *Order) New(name string) Priority {
	o.lock()
	defer o.mu.Unlock()
	o.names = append(o.names, name)
	o.up = append(o.up, nil)
	return Priority{o, int32(len(o.names) - 1)}
}

// Contains reports whether p is a priority of o.
func (o *Order) Contains(p Priority) bool { return p.o == o && o != nil }

// Len returns the number of priorities of o, Top and Bottom included.
func (o *Order) Len() int {
	o.lock()
	defer o.mu.Unlock()
	return len(o.names)
}

// Priorities returns every priority of o in creation order: Bottom, Top, then those made by New.
func (o *Order) Priorities() []Priority {
	o.lock()
	defer o.mu.Unlock()
	ps := make([]Priority, len(o.names))
	for i := range ps {
		ps[i] = Priority{o, int32(i)}
	}
	return ps
}

// Less declares a < b. Declaring an order already implied by o is allowed. It fails with
// ErrForeignPriority if a or b is not a priority of o, ErrFrozen after Freeze, and ErrCycle if
// a == b, a is Top, b is Bottom, or b ⪯ a already holds.
func (o *Order) Less(a, b Priority) error {
	if !o.Contains(a) || !o.Contains(b) {
		return fmt.Errorf("%w: %v < %v", ErrForeignPriority, a, b)
	}
	o.lock()
	defer o.mu.Unlock()
	na, nb := o.names[a.id], o.names[b.id]
	switch {
	case o.snap.Load() != nil:
		return fmt.Errorf("%w: %s < %s", ErrFrozen, na, nb)
	case a.id == b.id || a.id == topID || b.id == bottomID || o.reachesLocked(b.id, a.id):
		return fmt.Errorf("%w: %s < %s contradicts the order", ErrCycle, na, nb)
	case o.reachesLocked(a.id, b.id):
		return nil // already implied, Top and Bottom edges included
	}
	o.up[a.id] = append(o.up[a.id], b.id)
	return nil
}

// reachesLocked reports whether from ⪯ to, by depth-first search over declared edges.
func (o *Order) reachesLocked(from, to int32) bool {
	if from == to || from == bottomID || to == topID {
		return true
	}
	seen := make([]bool, len(o.names))
	stack := []int32{from}
	seen[from] = true
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, y := range o.up[x] {
			if y == to {
				return true
			}
			if !seen[y] {
				seen[y] = true
				stack = append(stack, y)
			}
		}
	}
	return false
}

// LessEq reports whether a ⪯ b in the reflexive, transitive closure of the declared order,
// with Bottom ⪯ every priority ⪯ Top. It is false when a or b is not a priority of o.
// After Freeze it does not lock.
func (o *Order) LessEq(a, b Priority) bool {
	if !o.Contains(a) || !o.Contains(b) {
		return false
	}
	if a.id == b.id || a.id == bottomID || b.id == topID {
		return true
	}
	if s := o.snap.Load(); s != nil {
		ra, oka := s.rankOf(a.id)
		rb, okb := s.rankOf(b.id)
		// Priorities made after Freeze have no declared edges: only the cases above hold.
		return oka && okb && s.reach[ra][rb/64]&(1<<(rb%64)) != 0
	}
	o.lock()
	defer o.mu.Unlock()
	return o.reachesLocked(a.id, b.id)
}

func (s *snapshot) rankOf(id int32) (int, bool) {
	if int(id) >= len(s.rank) {
		return 0, false
	}
	return int(s.rank[id]), true
}

// Freeze seals o: further Less calls fail with ErrFrozen. It returns a topological total order
// of the priorities that exist now, lowest first: Bottom has rank 0 and Top the last rank. The
// order is deterministic (Kahn's algorithm, ties broken by creation order). Freeze is
// idempotent; the caller may modify the returned slice.
func (o *Order) Freeze() []Priority {
	return slices.Clone(o.freeze().order)
}

func (o *Order) freeze() *snapshot {
	if s := o.snap.Load(); s != nil {
		return s
	}
	o.lock()
	defer o.mu.Unlock()
	if s := o.snap.Load(); s != nil {
		return s
	}
	n := len(o.names)
	indeg := make([]int, n)
	for _, ys := range o.up {
		for _, y := range ys {
			indeg[y]++
		}
	}
	// Bottom and Top take the ends; Kahn's algorithm orders the rest, lowest id first.
	s := &snapshot{order: make([]Priority, 0, n), rank: make([]int32, n)}
	s.order = append(s.order, Priority{o, bottomID})
	var ready []int32 // sorted descending so the lowest id pops from the end
	push := func(id int32) {
		i, _ := slices.BinarySearchFunc(ready, id, func(x, t int32) int { return int(t - x) })
		ready = slices.Insert(ready, i, id)
	}
	for id := int32(2); id < int32(n); id++ {
		if indeg[id] == 0 {
			push(id)
		}
	}
	for len(ready) > 0 {
		x := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		s.order = append(s.order, Priority{o, x})
		for _, y := range o.up[x] {
			if indeg[y]--; indeg[y] == 0 {
				push(y)
			}
		}
	}
	s.order = append(s.order, Priority{o, topID})
	for r, p := range s.order {
		s.rank[p.id] = int32(r)
	}
	// Closure in reverse topological order: each rank reaches itself and what its successors reach.
	words := (n + 63) / 64
	s.reach = make([][]uint64, n)
	for r := n - 1; r >= 0; r-- {
		bits := make([]uint64, words)
		bits[r/64] |= 1 << (r % 64)
		id := s.order[r].id
		succ := o.up[id]
		switch id {
		case bottomID:
			for i := range bits {
				bits[i] = ^uint64(0)
			}
		case topID:
		default:
			bits[(n-1)/64] |= 1 << ((n - 1) % 64) // Top
		}
		for _, y := range succ {
			for i, w := range s.reach[s.rank[y]] {
				bits[i] |= w
			}
		}
		s.reach[r] = bits
	}
	o.snap.Store(s)
	return s
}

// Rank returns p's index in the frozen total order (see [Order.Freeze]), freezing o if needed.
// It is false for a priority of another order, the zero Priority, or a priority created after
// Freeze. It does not lock once o is frozen.
func (o *Order) Rank(p Priority) (int, bool) {
	if !o.Contains(p) {
		return 0, false
	}
	return o.freeze().rankOf(p.id)
}
