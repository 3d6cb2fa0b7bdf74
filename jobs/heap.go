package jobs

// indexed is a binary heap that tells each element its position, so an
// element can be removed or re-sifted in O(log n) when its key changes or it
// leaves the queue early (cancellation, aging, parking).
type indexed[T any] struct {
	items  []T
	less   func(a, b T) bool
	setIdx func(x T, i int)
}

func newIndexed[T any](less func(a, b T) bool, setIdx func(x T, i int)) indexed[T] {
	return indexed[T]{less: less, setIdx: setIdx}
}

func (h *indexed[T]) len() int { return len(h.items) }

func (h *indexed[T]) top() T { return h.items[0] }

func (h *indexed[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	h.setIdx(x, i)
	h.up(i)
}

func (h *indexed[T]) pop() T { return h.remove(0) }

// remove takes out the element at position i.
func (h *indexed[T]) remove(i int) T {
	x := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	var zero T
	h.items[last] = zero // let the element go
	h.items = h.items[:last]
	if i != last {
		h.fix(i)
	}
	h.setIdx(x, -1)
	return x
}

// fix restores the order after the key of the element at i changed.
func (h *indexed[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *indexed[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.setIdx(h.items[i], i)
	h.setIdx(h.items[j], j)
}

func (h *indexed[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *indexed[T]) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			m = r
		}
		if !h.less(h.items[m], h.items[i]) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > i0
}
