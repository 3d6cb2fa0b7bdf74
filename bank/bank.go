// Package bank keeps a worker's ready threads of one priority in order of fork potential.
//
// A thread at fork depth d (the root has depth 0 and every spawn adds 1) has fork potential
// 2^-d: shallow threads are expected to unfold into more work than deep ones. A worker runs its
// youngest (deepest) thread itself and hands its oldest (shallowest) threads away when another
// worker asks for work, the classic work-stealing split of fork potential.
package bank

import "math"

// Entry is a thread with its fork depth.
type Entry[T any] struct {
	Item  T
	Depth int
}

// Bank holds threads ordered by depth, shallowest at the old end and deepest at the young end;
// among equal depths the most recently inserted is the youngest. The zero value is an empty
// bank ready to use. A bank is owned by one worker and is not safe for concurrent use.
type Bank[T any] struct {
	// buf is a ring buffer whose length is zero or a power of two; the n entries start at
	// head (oldest) and are sorted by depth ascending.
	buf  []Entry[T]
	head int
	n    int
}

// at returns the index in buf of the i-th entry from the old end.
func (b *Bank[T]) at(i int) int { return (b.head + i) & (len(b.buf) - 1) }

// Len returns the number of threads in the bank.
func (b *Bank[T]) Len() int { return b.n }

// Insert adds x at fork depth depth. Inserting at a depth no smaller than the youngest
// thread's, the common case of a spawn, is a constant-time push at the young end; otherwise
// x is placed by binary search after every thread of the same or smaller depth.
func (b *Bank[T]) Insert(x T, depth int) {
	if b.n == len(b.buf) {
		b.grow()
	}
	if b.n == 0 || depth >= b.buf[b.at(b.n-1)].Depth {
		b.buf[b.at(b.n)] = Entry[T]{x, depth}
		b.n++
		return
	}
	lo, hi := 0, b.n // find the first entry deeper than depth
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if b.buf[b.at(mid)].Depth <= depth {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for i := b.n; i > lo; i-- {
		b.buf[b.at(i)] = b.buf[b.at(i-1)]
	}
	b.buf[b.at(lo)] = Entry[T]{x, depth}
	b.n++
}

// grow doubles the ring, unrolling it so the oldest entry is at index 0.
func (b *Bank[T]) grow() {
	buf := make([]Entry[T], max(8, 2*len(b.buf)))
	for i := range b.n {
		buf[i] = b.buf[b.at(i)]
	}
	b.buf, b.head = buf, 0
}

// Remove takes the youngest thread: the deepest, and among equal depths the last inserted.
// It returns the thread, its depth, and false if the bank is empty.
func (b *Bank[T]) Remove() (T, int, bool) {
	if b.n == 0 {
		var zero T
		return zero, 0, false
	}
	b.n--
	i := b.at(b.n)
	e := b.buf[i]
	b.buf[i] = Entry[T]{} // let the GC free the item
	return e.Item, e.Depth, true
}

// Peek returns the thread Remove would take, without removing it.
func (b *Bank[T]) Peek() (T, bool) {
	if b.n == 0 {
		var zero T
		return zero, false
	}
	return b.buf[b.at(b.n-1)].Item, true
}

// Youngest returns the entry Remove would take, with its depth, without removing it.
func (b *Bank[T]) Youngest() (Entry[T], bool) {
	if b.n == 0 {
		return Entry[T]{}, false
	}
	return b.buf[b.at(b.n-1)], true
}

// Potential returns the bank's total fork potential scaled by 2^dmin, where dmin is the
// shallowest depth in the bank: the sum of 2^-(d-dmin) over its threads. The shallowest thread
// thus counts exactly 1 however deep it is, and threads more than about 1074 levels deeper
// than it count 0. An empty bank has potential 0.
func (b *Bank[T]) Potential() float64 {
	if b.n == 0 {
		return 0
	}
	dmin := b.buf[b.head].Depth
	var sum float64
	for i := range b.n {
		sum += weight(b.buf[b.at(i)].Depth - dmin)
	}
	return sum
}

// weight is 2^-rel, rounding to 0 below the smallest float64.
func weight(rel int) float64 { return math.Ldexp(1, -rel) }

// Split removes the fewest oldest threads whose potential is at least a quarter of the bank's
// total, appends them to dst oldest first and returns dst. A bank of one thread gives that
// thread; an empty bank returns dst unchanged.
func (b *Bank[T]) Split(dst []Entry[T]) []Entry[T] {
	if b.n == 0 {
		return dst
	}
	quarter := b.Potential() / 4
	dmin := b.buf[b.head].Depth
	var acc float64
	for acc < quarter {
		acc += weight(b.buf[b.head].Depth - dmin)
		dst = append(dst, b.buf[b.head])
		b.buf[b.head] = Entry[T]{}
		b.head = b.at(1)
		b.n--
	}
	return dst
}

// Any reports whether some thread satisfies pred, looking from the young end and stopping
// at the first that does.
func (b *Bank[T]) Any(pred func(T) bool) bool {
	for i := b.n - 1; i >= 0; i-- {
		if pred(b.buf[b.at(i)].Item) {
			return true
		}
	}
	return false
}

// Prune removes the threads for which keep returns false, keeping the order of the rest:
// threads that were run by other means (a stale entry) and must not be counted or dealt.
func (b *Bank[T]) Prune(keep func(T) bool) {
	n := 0
	for i := range b.n {
		if e := b.buf[b.at(i)]; keep(e.Item) {
			b.buf[b.at(n)] = e
			n++
		}
	}
	for i := n; i < b.n; i++ {
		b.buf[b.at(i)] = Entry[T]{}
	}
	b.n = n
}

// Clear removes every thread, appending them to dst oldest first, and returns dst.
func (b *Bank[T]) Clear(dst []Entry[T]) []Entry[T] {
	for i := range b.n {
		j := b.at(i)
		dst = append(dst, b.buf[j])
		b.buf[j] = Entry[T]{}
	}
	b.head, b.n = 0, 0
	return dst
}
