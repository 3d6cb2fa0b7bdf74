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
				for i := range *p {
					if x := (*p)[i].Load(); x != nil && (*p)[i].CompareAndSwap(x, nil) {
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

// The private stack gives a fork back to its owner only while it is the
// youngest one there, and drops the slots that promotions emptied, so that
// a fork promoted under younger ones is reported taken by someone else.
func TestPrivStackTake(t *testing.T) {
	var s privStack
	a, b, c := &Task{}, &Task{}, &Task{}
	s.push(a)
	s.push(b)
	s.push(c)
	if s.take(b) {
		t.Fatal("took b from under c")
	}
	if !s.take(c) || s.top != 2 {
		t.Fatalf("take(c): top %d", s.top)
	}
	s.slots[0], s.bot = nil, 1 // a heartbeat promotes a, the oldest
	if !s.take(b) || s.top != 0 || s.bot != 0 {
		t.Fatalf("take(b): top %d bot %d, want the promoted slot dropped", s.top, s.bot)
	}
	if s.take(a) {
		t.Fatal("took a promoted fork")
	}
	s.push(a)
	s.floor = 1
	s.push(b)
	if !s.take(b) || s.take(a) {
		t.Fatal("take went below the floor")
	}
}
