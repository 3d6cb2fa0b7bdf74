// Package tokens is a cooperative CPU limiter in the style of
// hnes/cpuworker, the baseline that fairly's HTTP experiment compares
// against: CPU-heavy work runs in tasks that need one of a few processor
// tokens (fewer than the processors, so that the rest stay free for
// latency-sensitive goroutines such as HTTP handlers), and a task gives its
// token up at an explicit checkpoint once it has held it for a time slice
// and another task waits. Waiting new tasks get a token before tasks that
// gave theirs up, as cpuworker prefers new tasks to CPU-intensive ones.
//
// What it leaves out of cpuworker: the event-intensive class (tasks that
// block in "event calls" and get a token first when they come back) and the
// scheduler goroutine; tokens pass directly from task to task. The module
// github.com/hnes/cpuworker itself is not fetchable through the Go module
// proxy, hence this small rewrite.
package tokens

import (
	"sync"
	"sync/atomic"
	"time"
)

// AutoTokens is cpuworker's choice of tokens for procs processors
// (CalcAutoP): one at 2 or fewer, then procs-1, procs-2 and 3/4 of procs
// as machines grow.
func AutoTokens(procs int) int {
	switch {
	case procs <= 2:
		return 1
	case procs <= 5:
		return procs - 1
	case procs <= 7:
		return procs - 2
	}
	return procs - procs/4
}

// Limiter hands out processor tokens to tasks.
type Limiter struct {
	slice   time.Duration
	waiting atomic.Int64 // tasks in the queues, read by checkpoints without the lock

	mu      sync.Mutex
	free    int
	fresh   []chan struct{} // new tasks waiting, first come first served
	resumed []chan struct{} // tasks that gave their token up at a checkpoint
}

// New returns a limiter of n tokens (at least 1) whose tasks give their
// token up at a checkpoint after holding it for slice.
func New(n int, slice time.Duration) *Limiter {
	return &Limiter{slice: slice, free: max(1, n)}
}

// Run runs f as a task: it waits for a token, calls f with its checkpoint
// function, and returns the token when f returns. f must call checkpoint
// often (every few tens of microseconds of work) and only from the
// goroutine that runs it.
func (l *Limiter) Run(f func(checkpoint func())) {
	l.acquire(&l.fresh)
	held := time.Now()
	defer l.release()
	f(func() {
		if l.waiting.Load() == 0 || time.Since(held) < l.slice {
			return
		}
		l.release()
		l.acquire(&l.resumed)
		held = time.Now()
	})
}

// acquire takes a free token, or waits in queue for one.
func (l *Limiter) acquire(queue *[]chan struct{}) {
	l.mu.Lock()
	if l.free > 0 {
		l.free--
		l.mu.Unlock()
		return
	}
	ch := make(chan struct{}, 1)
	*queue = append(*queue, ch)
	l.waiting.Add(1)
	l.mu.Unlock()
	<-ch
}

// release hands the token to the first waiting task, new ones first, or
// frees it.
func (l *Limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range []*[]chan struct{}{&l.fresh, &l.resumed} {
		if len(*q) > 0 {
			ch := (*q)[0]
			*q = (*q)[1:]
			l.waiting.Add(-1)
			ch <- struct{}{}
			return
		}
	}
	l.free++
}
