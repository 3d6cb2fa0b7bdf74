package jobs

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

// EventKind says what an Event reports.
type EventKind int

// The kinds of events.
const (
	// EventAged: a pending job's effective tier rose, or it became urgent.
	EventAged EventKind = iota + 1
	// EventAllocationChanged: a group's slot allocation changed.
	EventAllocationChanged
	// EventWeightChanged: SetGroupWeight changed a group's weight.
	EventWeightChanged
)

// String names the kind, for logs.
func (k EventKind) String() string {
	switch k {
	case EventAged:
		return "aged"
	case EventAllocationChanged:
		return "allocation-changed"
	case EventWeightChanged:
		return "weight-changed"
	}
	return "unknown"
}

// AllocationReason says why a group's allocation changed.
type AllocationReason int

// The reasons for an allocation change.
const (
	// ReasonRebalance: the demand of some group changed.
	ReasonRebalance AllocationReason = iota + 1
	// ReasonWeightChange: a weight was set.
	ReasonWeightChange
	// ReasonGroupDrained: the group has no work left.
	ReasonGroupDrained
	// ReasonPause: a group was paused or resumed.
	ReasonPause
)

// String names the reason, for logs.
func (r AllocationReason) String() string {
	switch r {
	case ReasonRebalance:
		return "rebalance"
	case ReasonWeightChange:
		return "weight-change"
	case ReasonGroupDrained:
		return "group-drained"
	case ReasonPause:
		return "pause"
	}
	return "unknown"
}

// Event is something the scheduler did on its own. Which fields are set
// depends on Kind.
type Event struct {
	Kind EventKind
	Time time.Time

	// EventAged.
	Type          JobType
	ID            string
	BaseTier      string
	EffectiveTier string
	Urgent        bool
	Wait          time.Duration

	// EventAllocationChanged and EventWeightChanged.
	Group                 string
	PrevSlots, NewSlots   int
	Reason                AllocationReason
	PrevWeight, NewWeight float64
}

// logs reports whether records at level are wanted.
func (c *core) logs(level slog.Level) bool {
	return c.log != nil && c.log.Enabled(context.Background(), level)
}

// evidence records why e was admitted.
func (c *core) evidence(e *entry, now time.Time) {
	if !c.logs(slog.LevelInfo) {
		return
	}
	g := e.grp
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "jobs.admit",
		slog.String("type", string(e.tid.typ)), slog.String("id", e.tid.id),
		slog.String("key", e.key.name), slog.String("group", g.name),
		slog.String("base_tier", c.tiers[e.base].name), slog.String("effective_tier", c.tiers[e.eff].name),
		slog.Bool("urgent", e.urgent),
		slog.Float64("key_vtime", e.startTag),
		slog.Float64("smith", c.score(e, now)), slog.Float64("weight", e.weight),
		slog.Float64("estimate_ms", c.estimateMs(e, now)), slog.Float64("wait_ms", c.ms(now)-c.ms(e.submitted)),
		slog.Int("group_running", g.running), slog.Int("group_alloc", g.alloc),
		slog.Int("running", c.nRunning), slog.Int("pending", c.nPending),
	)
}

// skip records why a candidate job was set aside.
func (c *core) skip(e *entry, reason string, now time.Time) {
	if !c.logs(slog.LevelDebug) {
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelDebug, "jobs.skip",
		slog.String("reason", reason),
		slog.String("type", string(e.tid.typ)), slog.String("id", e.tid.id),
		slog.String("key", e.key.name), slog.String("group", e.grp.name),
		slog.String("effective_tier", c.tiers[e.eff].name), slog.Bool("urgent", e.urgent),
		slog.Float64("wait_ms", c.ms(now)-c.ms(e.submitted)),
	)
}

// skipBand records that a whole tier waits for its cap.
func (c *core) skipBand(t *tierState, b *band, now time.Time) {
	if !c.logs(slog.LevelDebug) {
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelDebug, "jobs.skip",
		slog.String("reason", "tier cap"), slog.String("tier", t.name),
		slog.Int("tier_running", t.running), slog.Int("tier_cap", t.cap), slog.Int("pending", b.pending),
		slog.Float64("at_ms", c.ms(now)))
}

// skipGroup records that a group's jobs in a tier wait for a slot of its
// allocation.
func (c *core) skipGroup(tier int, g *group, pass int, now time.Time) {
	if !c.logs(slog.LevelDebug) {
		return
	}
	reason := "group allocation"
	switch {
	case g.paused:
		reason = "group paused"
	case g.running >= g.cap:
		reason = "group cap"
	}
	c.log.LogAttrs(context.Background(), slog.LevelDebug, "jobs.skip",
		slog.String("reason", reason), slog.String("group", g.name), slog.String("tier", c.tiers[tier].name),
		slog.Int("group_running", g.running), slog.Int("group_room", g.room(pass)), slog.Int("group_alloc", g.alloc),
		slog.Float64("at_ms", c.ms(now)))
}

// Snapshot is the scheduler's state at one moment.
type Snapshot struct {
	Time    time.Time
	Slots   int
	Running int
	// Pending jobs: urgent ones first, then by effective tier, highest
	// first, then longest waiting first.
	Pending []PendingJob
	// Groups in the order they became known (configured ones first).
	Groups []GroupState
	// Keys with pending or running jobs, lowest virtual time first.
	Keys []KeyState
	// VirtualTime is the system virtual time V, in seconds: where a new or
	// returning key starts, and what MaxLag is measured from.
	VirtualTime float64
}

// PendingJob describes a job waiting for admission.
type PendingJob struct {
	Type          JobType
	ID            string
	Key           string
	Group         string
	BaseTier      string
	EffectiveTier string
	Urgent        bool
	Wait          time.Duration
	// Estimate is the cost Smith's rule uses for it.
	Estimate time.Duration
	// Blocked is why it was last set aside ("type cap", "conflict", ...),
	// "retry backoff" while a retry waits, or "" when it is waiting for
	// its turn.
	Blocked string
	// Attempts is how many times it has run and failed.
	Attempts int
}

// GroupState describes a group.
type GroupState struct {
	Name       string
	Weight     float64
	Min, Cap   int
	Paused     bool
	Pending    int
	Running    int
	Allocation int
}

// KeyState describes a fairness key.
type KeyState struct {
	Key string
	// VirtualTime is the key's accumulated charge over its weight, in
	// seconds.
	VirtualTime      float64
	Pending, Running int
}

func (c *core) snapshot(now time.Time) Snapshot {
	if c.stale() {
		c.reallocate(now)
	}
	s := Snapshot{Time: now, Slots: c.s.Slots, Running: c.nRunning, VirtualTime: c.vnow}
	for _, js := range c.jobs {
		e := js.pending
		if e == nil {
			continue
		}
		s.Pending = append(s.Pending, PendingJob{
			Type: e.tid.typ, ID: e.tid.id, Key: e.key.name, Group: e.grp.name,
			BaseTier: c.tiers[e.base].name, EffectiveTier: c.tiers[e.eff].name, Urgent: e.urgent,
			Wait: now.Sub(e.submitted), Estimate: time.Duration(c.estimateMs(e, now) * float64(time.Millisecond)), Blocked: e.reason,
			Attempts: e.attempts,
		})
	}
	tier := func(name string) int { return c.s.tierIndex[name] }
	slices.SortFunc(s.Pending, func(a, b PendingJob) int {
		if a.Urgent != b.Urgent {
			if a.Urgent {
				return -1
			}
			return 1
		}
		if d := cmp.Compare(tier(b.EffectiveTier), tier(a.EffectiveTier)); d != 0 {
			return d
		}
		return cmp.Compare(b.Wait, a.Wait)
	})
	for _, g := range c.glist {
		s.Groups = append(s.Groups, GroupState{
			Name: g.name, Weight: g.weight, Min: g.min, Cap: g.cap, Paused: g.paused,
			Pending: g.pending, Running: g.running, Allocation: g.alloc,
		})
	}
	for _, k := range c.keys {
		if k.pending+k.running > 0 {
			s.Keys = append(s.Keys, KeyState{Key: k.name, VirtualTime: k.vt, Pending: k.pending, Running: k.running})
		}
	}
	slices.SortFunc(s.Keys, func(a, b KeyState) int { return cmp.Compare(a.VirtualTime, b.VirtualTime) })
	return s
}

// metrics gives the plain figures of package jobsmetrics.
func (c *core) metrics() jobsmetrics.Snapshot {
	if c.stale() {
		c.reallocate(c.s.Clock())
	}
	m := jobsmetrics.Snapshot{
		QueueWait:           c.stats.wait.Clone(),
		AgingPromotions:     c.stats.promotions,
		ExcessRedistributed: c.stats.redistributed,
	}
	for i, t := range c.tiers {
		m.PendingByTier = append(m.PendingByTier, jobsmetrics.Named{Name: t.name, Value: float64(c.stats.pendingTier[i])})
	}
	for _, g := range c.glist {
		m.GroupAllocation = append(m.GroupAllocation, jobsmetrics.Named{Name: g.name, Value: float64(g.alloc)})
		u := 0.0
		if g.alloc > 0 {
			u = float64(g.running) / float64(g.alloc)
		}
		m.GroupUtilization = append(m.GroupUtilization, jobsmetrics.Named{Name: g.name, Value: u})
	}
	return m
}
