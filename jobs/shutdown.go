package jobs

import (
	"context"
	"fmt"
)

// Shutdown contract.
//
// Close and Shutdown both refuse new jobs at once (ErrClosed) and resume
// paused groups. Close drains: every job already accepted runs, retries
// included (without their backoff), and Close returns when the last has
// finished. Shutdown drops: every job not yet running is withdrawn (its
// RunSync callers get ErrClosed) and reported, running jobs finish, and
// none is retried; if ctx ends first, the running jobs' contexts are
// cancelled and Shutdown returns ctx.Err() without waiting further (the
// jobs still report their results to their callers when they end). A
// Close or Shutdown called while another is under way waits for the same
// end (a Shutdown also drops what the Close had not started yet). No job
// is run twice or lost: each accepted job either runs to its end or is
// reported dropped.

// begin starts shutting down, dropping the pending jobs when drop is set,
// and returns those it dropped; mu is held.
func (s *Scheduler) begin(drop bool) []JobRef {
	if !s.closing {
		s.closing = true
		now := s.now()
		for _, g := range s.c.glist {
			s.c.setPaused(g, false, now)
		}
		go s.awaitDrained()
	}
	if !drop {
		return nil
	}
	s.dropping = true
	var dropped []JobRef
	for _, e := range s.c.pendingJobs() {
		s.c.remove(e)
		e.end(ErrClosed)
		dropped = append(dropped, e.ref())
	}
	return dropped
}

// awaitDrained marks the shutdown complete once nothing is pending or
// running and every job's end has been handled.
func (s *Scheduler) awaitDrained() {
	<-s.drained
	s.busy.Wait()
	s.release()
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	close(s.shut)
}

// Close refuses new jobs, resumes paused groups, and waits until every
// job already submitted has run: no job is dropped. It must not be called
// from a job. A Close called while another Close or a Shutdown is under
// way waits for it to complete; after that, Close returns nil at once.
func (s *Scheduler) Close() error {
	if s.cl != nil {
		return s.cl.close(context.Background())
	}
	s.mu.Lock()
	s.begin(false)
	s.unlockAndLaunch(s.commit())
	<-s.shut
	return nil
}

// Shutdown refuses new jobs, drops every job not yet running (reported in
// dropped; their RunSync callers get ErrClosed) and waits for the running
// ones to finish. If ctx ends first, it cancels the running jobs' contexts
// and returns ctx.Err(). It must not be called from a job.
func (s *Scheduler) Shutdown(ctx context.Context) (dropped []JobRef, err error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: Shutdown with a nil context", ErrInvalidJob)
	}
	if s.cl != nil {
		return nil, s.cl.close(ctx)
	}
	s.mu.Lock()
	dropped = s.begin(true)
	s.unlockAndLaunch(s.commit())
	select {
	case <-s.shut:
		return dropped, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, e := range s.c.starts.items {
		e.ctx.cancel()
	}
	s.mu.Unlock()
	return dropped, ctx.Err()
}
