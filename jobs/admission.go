package jobs

import "time"

// Admission. Each time a slot may be free, dispatch admits jobs one at a
// time, each the best admissible job in the fair order:
//
//  1. urgent jobs, in the order they became urgent;
//  2. then, pass by pass (a group's sure slots, then tied fractional
//     slots, then any idle slot below its cap), tier by tier from the
//     highest effective tier, the key with the smallest virtual time
//     among the groups with room in that pass, and its first job in
//     in-key order.
//
// A candidate that fails a check of its own (tier cap, type cap,
// conflict) is set aside (blocking.go) and the search goes on, so a
// blocked job never holds up the jobs behind it.

// dispatch admits jobs while slots are free and returns them in order.
func (c *core) dispatch(now time.Time) []*entry {
	c.prepare(now)
	var out []*entry
	for e := c.next(now); e != nil; e = c.next(now) {
		out = append(out, e)
	}
	return out
}

// prepare brings the state up to now before admitting: aging steps,
// retries whose backoff ended, the TTL sweep, the allocation, the jobs
// released from what blocked them.
func (c *core) prepare(now time.Time) {
	c.promote(now)
	c.ready(now)
	c.sweep(now)
	if c.stale() {
		c.reallocate(now)
	}
	c.unpark()
}

// next admits the best admissible job, or returns nil when no slot is free
// or no pending job can be admitted.
func (c *core) next(now time.Time) *entry {
	if c.nRunning >= c.s.Slots {
		return nil
	}
	e := c.pickUrgent(now)
	for pass := passSure; e == nil && pass <= passBorrow; pass++ {
		e = c.pick(now, pass)
	}
	if e != nil {
		c.admit(e, now)
	}
	return e
}

// pickUrgent takes the longest-urgent job that passes its checks. Urgent
// jobs skip the group allocation but not a paused group or its cap.
func (c *core) pickUrgent(now time.Time) *entry {
	for c.urgent.len() > 0 {
		e := c.urgent.top()
		reason, r := c.blocked(e)
		if reason == "" {
			switch g := e.grp; {
			case g.paused:
				reason, r = "group paused", g
			case g.running >= g.cap:
				reason, r = "group cap", g
			}
		}
		if reason == "" {
			c.urgent.pop()
			return e
		}
		c.park(e, r, reason, now)
	}
	return nil
}

// pick finds the next job by the ordering in one pass: the highest
// effective tier with a candidate; in it, among groups with room in this
// pass and jobs whose base tier has room, the key with the smallest
// virtual time; in that key, its first job. A job failing its own checks
// is set aside and the search goes on.
func (c *core) pick(now time.Time, pass int) *entry {
	for t := len(c.bands) - 1; t >= 0; t-- {
		for {
			var best *keyNode
			for base, b := range c.bands[t] {
				if b.pending == 0 {
					continue
				}
				if ts := c.tiers[base]; ts.running >= ts.cap {
					c.skipBand(ts, b, now)
					continue
				}
				for _, bg := range b.active {
					g := bg.g
					if g.paused || g.running >= g.room(pass) {
						c.skipGroup(t, g, pass, now)
						continue
					}
					if n := bg.keys.top(); best == nil || c.nodeLess(n, best) {
						best = n
					}
				}
			}
			if best == nil {
				break
			}
			e := best.jobs.top()
			if reason, r := c.blocked(e); reason != "" {
				c.park(e, r, reason, now)
				continue
			}
			c.unplace(e)
			return e
		}
	}
	return nil
}

// admit starts e: it takes its slot and its units, and its key is charged
// the current estimate.
func (c *core) admit(e *entry, now time.Time) {
	e.st = running
	e.start = now
	if e.timerIdx >= 0 {
		c.timers.remove(int(e.timerIdx))
	}
	c.stats.pendingTier[e.eff]--
	e.js.pending, e.js.running = nil, e
	c.nPending--
	c.nRunning++
	c.tiers[e.base].running++
	e.typ.running++
	if cg := e.typ.cfg.ConflictGroup; cg != "" {
		ck := conflictKey{cg, e.tid.id}
		cf := c.conflicts[ck]
		if cf == nil {
			cf = &conflict{key: ck}
			c.conflicts[ck] = cf
		}
		cf.running++
	}
	c.setDemand(e.grp, -1, 1)
	k := e.key
	k.pending--
	k.running++
	k.lastSeen = now
	e.charged = c.estimateOf(e, now)
	e.startTag = c.charge(k, e)
	c.starts.push(e)
	c.advance()
	c.stats.wait.Observe(now.Sub(e.submitted).Seconds())
	c.evidence(e, now)
}
