package jobs

import "time"

// Retry makes a failed job run again after a backoff. A retried job keeps
// its original submission time, so it goes on aging from where it was, as
// the aging design recommends ("the task has been waiting even longer"),
// and it keeps its place for deduplication: a submission of the same
// (type, id) during the backoff joins it. The zero value never retries.
type Retry struct {
	// Max is how many times a job is run again after failing.
	Max int
	// Backoff is the wait before the first retry; each further retry
	// waits twice as long as the previous one, up to MaxBackoff.
	Backoff time.Duration
	// MaxBackoff caps the wait; 0 means no cap.
	MaxBackoff time.Duration
}

// delay is the backoff before retry number n (1 for the first).
func (r Retry) delay(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d > 0; i++ {
		if r.MaxBackoff > 0 && d >= r.MaxBackoff || d > time.Duration(1<<62)/2 {
			break
		}
		d *= 2
	}
	if r.MaxBackoff > 0 {
		d = min(d, r.MaxBackoff)
	}
	return d
}

// hold holds a completed job out of the queue until its backoff ends.
func (c *core) hold(e *entry, until time.Time) {
	e.st = delayed
	e.reason = "retry backoff"
	e.nextAge = until
	e.js.pending = e
	c.nDelayed++
	c.delays.push(e)
}

// ready queues the retries whose backoff has ended.
func (c *core) ready(now time.Time) {
	for c.delays.len() > 0 && !c.delays.top().nextAge.After(now) {
		e := c.delays.pop()
		c.nDelayed--
		c.enqueue(e, e.key.name, e.grp.name, now)
	}
}
