package engine

import (
	"sync"
	"sync/atomic"
	"testing"
)

// The owner of a lazy stack pushes forks (growing the stack as it goes) and
// takes them back while another goroutine scans the published array and
// takes what it finds, as a revoker does. Each fork must be taken exactly
// once: a fork copied into a grown array while still takeable in the old
// one ran twice before grow swapped it out.
func TestLazyStackTakenOnce(t *testing.T) {
	const rounds, forks = 300, 100
	for range rounds {
		var s lazyStack
		tasks := make([]Task, forks)
		var took [forks]atomic.Int32
		index := func(x *Task) int {
			for i := range tasks {
				if &tasks[i] == x {
					return i
				}
			}
			t.Fatal("unknown task")
			return -1
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() { // the revoker
			for !stop.Load() {
				p := s.pub.Load()
				if p == nil {
					continue
				}
				for i := range p.state {
					if x := p.claim(i); x != nil {
						took[index(x)].Add(1)
					}
				}
			}
		})
		for i := range tasks {
			s.push(&tasks[i])
		}
		for i := forks - 1; i >= 0; i-- {
			if s.take(&tasks[i]) {
				took[i].Add(1)
			} else if s.top > i {
				s.top = i // taken by the revoker: the owner would find it claimed or shared
			}
		}
		stop.Store(true)
		wg.Wait()
		for i := range took {
			if n := took[i].Load(); n != 1 {
				t.Fatalf("fork %d taken %d times", i, n)
			}
		}
	}
}

// lazyRec is a private fork whose task runs f once promoted.
type lazyRec struct {
	task Task
	f    func(*Task)
}

func (r *lazyRec) Promote(parent *Task) *Task {
	r.task.InitLike(parent, fn(r.f))
	return &r.task
}

// push forks r on s at the next level, as thread.Fork2's slow path does.
func (s *Forks) pushRec(r Lazy) int {
	i := s.top
	s.Install(r)
	s.Push()
	return i
}

// The private stack gives a fork back to its owner unless it was promoted
// (its level is under bot); a pop drops the forks above its level (left by
// a recovered panic), and Take reports a promoted fork gone.
func TestForksPopAndTake(t *testing.T) {
	var s Forks
	s.init(nil)
	a, b, c := &lazyRec{}, &lazyRec{}, &lazyRec{}
	la, lb, lc := s.pushRec(a), s.pushRec(b), s.pushRec(c)
	if !s.Pop(lc) || s.top != 2 {
		t.Fatalf("Pop(c): top %d", s.top)
	}
	s.slots[la], s.bot = nil, 1 // a heartbeat promotes a, the oldest
	if !s.Pop(lb) || s.top != 1 {
		t.Fatalf("Pop(b): top %d", s.top)
	}
	if s.Pop(la) || s.Take(la) || s.top != 0 || s.bot != 0 {
		t.Fatalf("took a promoted fork: top %d bot %d", s.top, s.bot)
	}
	// b and c are free records now, reused by the next forks of their levels.
	if s.slots[0] != nil {
		t.Fatal("level 0 has no record after a's promotion")
	}
	a = &lazyRec{}
	la = s.pushRec(a)
	lb = s.pushRec(b)
	if s.slots[lb] != Lazy(b) || s.slots[lb+1] != Lazy(c) {
		t.Fatal("free records were not kept")
	}
	s.Push() // c's level: its first call panics and the thread recovers
	if !s.Pop(lb) || s.top != lb {
		t.Fatalf("Pop(b) above a panicked fork: top %d", s.top)
	}
	s.Push() // b's level again, and c's, whose first call panics
	s.Push()
	s.slots[la], s.bot = nil, 1 // a is promoted meanwhile
	if s.Pop(la) || s.Take(la) || s.top != 0 || s.bot != 0 {
		t.Fatalf("took a promoted fork above a panicked one: top %d bot %d", s.top, s.bot)
	}
}
