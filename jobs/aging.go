package jobs

import "time"

// Stepwise aging. A job's level is its base tier plus one step per
// Interval once it has waited Grace; its effective tier is the level
// capped by the ceiling; once the level reaches Urgent it is urgent. The
// wait counts only time its group was not paused. Jobs sit in a timer heap
// by their next step, so a job moves between heaps only when it changes
// tier.

// agingWait is how long e has waited for aging purposes at now.
func (c *core) agingWait(e *entry, now time.Time) time.Duration {
	return now.Sub(e.submitted) - (e.grp.pausedFor(now) - e.pausedBase)
}

// level is how far e has aged at now (not capped), and when it next
// steps: zero when aging is off or its group is paused.
func (c *core) level(e *entry, now time.Time) (lvl int, next time.Time) {
	a := c.s.Aging
	if a.Interval == 0 {
		return e.base, time.Time{}
	}
	w := c.agingWait(e, now)
	steps := 0
	if d := w - a.Grace; d >= a.Interval {
		steps = int(d / a.Interval)
	}
	if e.grp.paused {
		return e.base + steps, time.Time{}
	}
	return e.base + steps, now.Add(a.Grace + time.Duration(steps+1)*a.Interval - w)
}

// age brings e's effective tier and urgency up to date and re-arms its
// promotion timer (or files it with its paused group). It reports whether
// anything changed; a changed job is out of the heaps and must be placed.
func (c *core) age(e *entry, now time.Time) bool {
	a := c.s.Aging
	lvl, next := c.level(e, now)
	eff := e.base
	if lvl > eff {
		eff = min(lvl, max(c.s.ceiling, e.base))
	}
	urgent := a.Urgent > 0 && lvl >= a.Urgent
	changed := eff != e.eff || urgent != e.urgent
	if urgent && !e.urgent {
		// When it became urgent, not when we noticed: the urgent queue is
		// first come, first served, and that is what bounds the wait.
		var need time.Duration
		if u := a.Urgent - e.base; u > 0 {
			need = a.Grace + time.Duration(u)*a.Interval
		}
		e.urgentAt = now.Add(need - c.agingWait(e, now))
	}
	if changed && (e.idx >= 0 || e.urgIdx >= 0) {
		c.unplace(e)
	}
	if eff != e.eff {
		c.stats.pendingTier[e.eff]--
		c.stats.pendingTier[eff]++
	}
	e.eff, e.urgent = eff, urgent
	if e.timerIdx >= 0 {
		c.timers.remove(int(e.timerIdx))
	}
	if a.Interval > 0 && !urgent && (eff < c.s.ceiling || a.Urgent > 0) {
		if next.IsZero() {
			e.grp.frozen = append(e.grp.frozen, e)
		} else {
			e.nextAge = next
			c.timers.push(e)
		}
	}
	return changed
}

// reage ages a pending job at now and, if it moved, puts it back where
// dispatch looks for it, reporting the step.
func (c *core) reage(e *entry, now time.Time) {
	oldEff, wasUrgent := e.eff, e.urgent
	if !c.age(e, now) {
		return
	}
	steps := e.eff - oldEff
	if e.urgent && !wasUrgent {
		steps++
	}
	c.stats.promotions += uint64(max(steps, 0))
	c.events = append(c.events, Event{
		Kind: EventAged, Time: now, Type: e.tid.typ, ID: e.tid.id,
		BaseTier: c.tiers[e.base].name, EffectiveTier: c.tiers[e.eff].name,
		Urgent: e.urgent, Wait: now.Sub(e.submitted),
	})
	if e.st != parked {
		c.place(e)
	}
}

// promote applies every aging step that is due.
func (c *core) promote(now time.Time) {
	for c.timers.len() > 0 && !c.timers.top().nextAge.After(now) {
		c.reage(c.timers.top(), now)
	}
}
