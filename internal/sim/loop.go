package sim

// The event loop and its virtual clock. Every change of the simulated
// machine happens at an event: a worker reaching the end of what it was
// doing (a segment of a thread's work, a runtime operation), an interactive
// arrival, a tick of the ticker, the end of a detached thread's segment.
// Events at one time run in the order they were scheduled, so that one
// seed gives one schedule.

// Kinds of events.
const (
	evWorker   uint8 = iota + 1 // a worker goes on
	evArrive                    // an interactive thread arrives
	evTick                      // the ticker raises attention; the watchdog looks
	evDetached                  // a detached goroutine reaches its next preemption point
	evKernel                    // the kernel is submitted
	evPoke                      // between ticks, the ticker raises busy workers' attention (policy.Poke)
)

// event is one scheduled event; gen must match the worker's generation for
// an evWorker event to count (a revocation cancels the pending one).
type event struct {
	t    int64
	seq  uint64
	kind uint8
	w    int32
	gen  uint32
	g    *vgor
}

// queue is a binary min-heap of events by (t, seq), written out rather
// than through container/heap, whose interface boxes every event.
type queue []event

func (q queue) less(i, j int) bool {
	return q[i].t < q[j].t || q[i].t == q[j].t && q[i].seq < q[j].seq
}

func (q *queue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() event {
	h := *q
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return e
}

// clock is the virtual clock with its pending events.
type clock struct {
	seq uint64
	q   queue
}

func (c *clock) at(e event) {
	c.seq++
	e.seq = c.seq
	c.q.push(e)
}

func (c *clock) pop() (event, bool) {
	if len(c.q) == 0 {
		return event{}, false
	}
	return c.q.pop(), true
}

// Entry is one line of the event log: what an event did. Worker events
// record the rank the worker runs afterwards and the thread it runs (0 for
// none); arrivals the worker the thread was steered to; ticks the worker
// whose token the watchdog revoked (-1 for none).
type Entry struct {
	T      int64 `json:"t"`
	Kind   uint8 `json:"kind"`
	Worker int32 `json:"worker"`
	Rank   int32 `json:"rank"`
	Thread int64 `json:"thread"`
}

// log keeps the digest of every entry and, when asked, the entries; a
// checker (replay) compares each entry as it is made.
type log struct {
	digest  uint64
	keep    bool
	entries []Entry
	n       int
	check   func(i int, e Entry) error
	err     error
}

func (l *log) add(e Entry) {
	if l.check != nil && l.err == nil {
		l.err = l.check(l.n, e)
	}
	l.n++
	for _, x := range [...]uint64{uint64(e.T), uint64(e.Kind), uint64(e.Worker), uint64(e.Rank), uint64(e.Thread)} {
		l.digest = fnv1a(l.digest, x)
	}
	if l.keep {
		l.entries = append(l.entries, e)
	}
}

// fnv1a folds the eight bytes of x into the FNV-1a hash d.
func fnv1a(d, x uint64) uint64 {
	if d == 0 {
		d = 14695981039346656037 // the offset basis
	}
	for range 8 {
		d ^= x & 0xff
		d *= 1099511628211
		x >>= 8
	}
	return d
}
