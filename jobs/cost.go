package jobs

import "time"

// Learned cost. Each (type, id) has an estimate of its wall time: the
// type's DefaultCost until the first run, that run's time after it, and an
// exponential moving average r ← α·actual + (1 − α)·r from the second run
// on. The design asks that the estimate be "based on real data after one
// execution", so the first observation replaces the default rather than
// being smoothed into it.

// minEstimateMs keeps w/r finite for a job learned to take no time.
const minEstimateMs = 1e-3

// job gives the state of a (type, id), making it at first sight.
func (c *core) job(id tid) *jobState {
	js, ok := c.jobs[id]
	if !ok {
		js = &jobState{}
		c.jobs[id] = js
	}
	return js
}

// estimateOf is the learned cost of e's (type, id) in seconds, or the
// type's DefaultCost at first sight.
func (c *core) estimateOf(e *entry, now time.Time) float64 {
	js := e.js
	js.last = now
	if js.known {
		return js.est
	}
	return e.typ.cfg.DefaultCost.Seconds()
}

// estimateMs is estimateOf in milliseconds, kept above zero for w/r.
func (c *core) estimateMs(e *entry, now time.Time) float64 {
	return max(c.estimateOf(e, now)*1000, minEstimateMs)
}

// learn records that a run of js took secs.
func (c *core) learn(js *jobState, secs float64, now time.Time) {
	if js.known {
		js.est = c.s.Alpha*secs + (1-c.s.Alpha)*js.est
	} else {
		js.est, js.known = secs, true
	}
	js.last = now
}
