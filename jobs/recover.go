package jobs

import (
	"context"
	"fmt"
	"time"
)

// open takes st for this scheduler and brings back what it holds: the
// keys' charges, the learned estimates, the system virtual time, and the
// jobs. A job that was pending comes back with its submission time, so it
// ages on from where it was; a job that was running when its process died
// comes back pending (at least once; its next run has the next Attempt
// number); a job in a retry backoff waits out the rest of it.
func (s *Scheduler) open(st *Store) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.owned {
		return fmt.Errorf("%w: the store is in use by another scheduler", ErrInvalidConfig)
	}
	got, err := st.load(context.Background(), st.db)
	if err != nil {
		return err
	}
	c := s.c
	now := s.now()
	c.restoreLearned(got, now)
	for _, r := range got.rows {
		e := c.entryOf(r, now)
		switch {
		case e == nil:
		case r.state == rowDelayed:
			c.hold(e, time.Unix(0, r.until))
		default:
			if r.state == rowRunning {
				s.recovered++
			}
			c.enqueue(e, r.key, r.grp, now)
		}
	}
	st.owned = true
	s.st = st
	s.j = newJournal(st, c.s)
	return nil
}

// restoreLearned brings back the keys' charges, the learned estimates
// and the system virtual time.
func (c *core) restoreLearned(got *stored, now time.Time) {
	for _, kr := range got.keys {
		k := c.key(kr.name, now)
		c.setVT(k, kr.charge/k.weight)
		k.lastSeen = time.Unix(0, kr.last)
	}
	for _, er := range got.ests {
		js := c.job(tid{JobType(er.typ), er.id})
		js.est, js.known, js.last = er.est, true, time.Unix(0, er.last)
	}
	c.vnow = got.vnow
}

// entryOf makes the entry of a stored job, with its key and group set
// (enqueue sets them again); nil for a type the configuration does not
// know, which stays in the store.
func (c *core) entryOf(r row, now time.Time) *entry {
	t, ok := c.types[JobType(r.typ)]
	if !ok {
		if c.log != nil {
			c.log.Warn("jobs.store: stored job of an unknown type left in the store", "type", r.typ, "id", r.id)
		}
		return nil
	}
	e := &entry{
		tid: tid{t.name, r.id}, typ: t, weight: r.weight, payload: r.payload,
		retry: r.retry, attempts: r.failures, owners: 1, stored: true,
		submitted: time.Unix(0, r.submitted), owner: r.owner,
	}
	e.ctx.attempt = r.runs
	e.js = c.job(e.tid)
	e.key, e.grp = c.key(r.key, now), c.group(r.grp)
	return e
}

// release stops the journal after a final commit and frees the store.
func (s *Scheduler) release() {
	if s.j == nil {
		return
	}
	s.j.stop()
	s.st.mu.Lock()
	s.st.owned = false
	s.st.mu.Unlock()
}

// Recovered is how many jobs were running in the store's previous
// process when it ended and came back pending in this one.
func (s *Scheduler) Recovered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recovered
}
