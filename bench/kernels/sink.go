package kernels

import (
	goruntime "runtime"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Sink is a time sink: a parallel computation that never finishes on its
// own, so that it takes every cycle its priority is given or donated. Its
// threads, two per worker, compute for some tens of microseconds between
// preemption points.
type Sink struct {
	stop atomic.Bool
	h    *thread.Handle[struct{}]
}

// StartSink starts a time sink at priority p of rt.
func StartSink(rt *runtime.Runtime, p fairness.Priority) *Sink {
	s := &Sink{}
	s.h = thread.Go(rt, p, func(c *thread.Ctx) struct{} {
		hs := make([]*thread.Handle[struct{}], 2*rt.Procs())
		for i := range hs {
			hs[i] = thread.Spawn(c, p, s.spin)
		}
		for _, h := range hs {
			_, _ = thread.Join(c, h) // spin cannot fail
		}
		return struct{}{}
	})
	return s
}

func (s *Sink) spin(c *thread.Ctx) struct{} {
	n := 0
	for !s.stop.Load() {
		n += FibSeq(18) // some tens of microseconds between preemption points
		thread.Yield(c)
	}
	goruntime.KeepAlive(n) // the work must not be optimised away
	return struct{}{}
}

// Close stops the sink and waits for it; a nil Sink is already closed. The
// error is the sink thread's: the runtime was closed under it.
func (s *Sink) Close() error {
	if s == nil {
		return nil
	}
	s.stop.Store(true)
	_, err := s.h.Wait()
	return err
}
