package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agingConfig: two tiers; a low job reaches the top tier after 15 s and
// is urgent after 20 s: grace + (urgent − base) × interval = 10 + 2×5.
func agingConfig() Config {
	return Config{
		Slots: 2,
		Tiers: []Tier{{Name: "low"}, {Name: "high"}},
		Types: map[JobType]TypeConfig{
			"batch": {DefaultCost: sec, Tier: "low"},
			"ui":    {DefaultCost: sec, Tier: "high"},
		},
		Aging: Aging{Grace: 10 * sec, Interval: 5 * sec, Urgent: 2},
	}
}

// stream keeps the high tier busy: three fresh high jobs every second,
// each running a second, more than the slots can take.
func stream(sm *sim, until int, low *entry) {
	for tick := 1; tick <= until && sm.at(low) < 0; tick++ {
		for i := range 3 {
			sm.add("ui", itoa(tick)+"-"+itoa(i), "ui"+itoa(i), "", 1, sec)
		}
		sm.advance(sec)
	}
}

func TestAgingBoundsWaitUnderHigherTierStream(t *testing.T) {
	for _, key := range []string{"batch", "ui0"} { // its own key, or sharing the stream's
		sm := newSim(t, agingConfig())
		sm.add("ui", "first", "ui0", "", 1, sec)
		sm.add("ui", "second", "ui1", "", 1, sec)
		low := sm.add("batch", "export", key, "", 1, sec)
		sm.dispatch()
		stream(sm, 100, low)
		bound := 10 + 2*5 + 1.0 // the bound, plus one job's length until a slot frees
		require.GreaterOrEqual(t, sm.at(low), 0.0, "never admitted")
		assert.LessOrEqual(t, sm.at(low), bound)
		t.Logf("key %q: admitted after %.0f s (bound %.0f s)", key, sm.at(low), bound)
	}
	// Without aging the same stream starves it.
	cfg := agingConfig()
	cfg.Aging = Aging{}
	sm := newSim(t, cfg)
	low := sm.add("batch", "export", "batch", "", 1, sec)
	sm.add("ui", "a", "ui0", "", 1, sec)
	sm.add("ui", "b", "ui1", "", 1, sec)
	sm.dispatch()
	stream(sm, 100, low)
	assert.Equal(t, -1.0, sm.at(low))
}

func TestAgingSnapshotAndEvents(t *testing.T) {
	sm := newSim(t, agingConfig())
	sm.add("ui", "busy1", "", "", 1, time.Hour)
	sm.add("ui", "busy2", "", "", 1, time.Hour)
	sm.dispatch()
	sm.add("batch", "export", "", "", 1, sec)
	tiers := func() (string, string, bool) {
		p := sm.c.snapshot(sm.now).Pending
		require.Len(t, p, 1)
		return p[0].BaseTier, p[0].EffectiveTier, p[0].Urgent
	}
	base, eff, urgent := tiers()
	assert.Equal(t, []any{"low", "low", false}, []any{base, eff, urgent})
	sm.advance(14 * sec)
	_, eff, _ = tiers()
	assert.Equal(t, "low", eff, "still in grace + one interval")
	sm.advance(sec)
	base, eff, urgent = tiers()
	assert.Equal(t, []any{"low", "high", false}, []any{base, eff, urgent})
	sm.advance(5 * sec)
	_, eff, urgent = tiers()
	assert.Equal(t, []any{"high", true}, []any{eff, urgent})
	var kinds []EventKind
	for _, ev := range sm.c.events {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == EventAged {
			assert.Equal(t, "low", ev.BaseTier)
		}
	}
	assert.Contains(t, kinds, EventAged)
	assert.Equal(t, uint64(2), sm.c.stats.promotions)
}

func TestUrgentBypassesGroupAllocation(t *testing.T) {
	cfg := Config{
		Slots:  2,
		Tiers:  []Tier{{Name: "t"}},
		Types:  map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}},
		Groups: map[string]GroupConfig{"A": {Weight: 1}, "B": {Weight: 1}},
		Aging:  Aging{Grace: 5 * sec, Interval: 5 * sec, Urgent: 1},
	}
	run := func(cfg Config) float64 {
		sm := newSim(t, cfg)
		sm.add("j", "long", "b", "B", 1, 100*sec)
		second := sm.add("j", "second", "b", "B", 1, sec)
		for i := range 5 {
			sm.add("j", "a"+itoa(i), "a", "A", 1, sec)
		}
		sm.dispatch()
		for tick := 1; tick <= 150; tick++ {
			sm.add("j", "a-"+itoa(tick), "a", "A", 1, sec) // A always has work
			sm.advance(sec)
		}
		return sm.at(second)
	}
	assert.Equal(t, 10.0, run(cfg), "urgent at grace + 1 interval, takes A's next free slot")
	cfg.Aging = Aging{}
	assert.Equal(t, 100.0, run(cfg), "without urgency it waits for its group's slot")
}

// Point 7: a paused group's jobs do not age; they age on from where they
// were once it resumes.
func TestPauseFreezesAging(t *testing.T) {
	cfg := agingConfig()
	sm := newSim(t, cfg)
	sm.add("ui", "busy1", "", "", 1, time.Hour)
	sm.add("ui", "busy2", "", "", 1, time.Hour)
	sm.dispatch()
	e := sm.add("batch", "export", "", "P", 1, sec)
	sm.advance(5 * sec)
	sm.c.setPaused(sm.c.groups["P"], true, sm.now)
	sm.advance(100 * sec)
	assert.Equal(t, e.base, e.eff, "no aging while paused")
	assert.False(t, e.urgent)
	sm.c.setPaused(sm.c.groups["P"], false, sm.now)
	sm.advance(9 * sec) // 14 s of unpaused wait: still in grace + one interval
	assert.Equal(t, e.base, e.eff)
	sm.advance(sec)
	assert.Equal(t, 1, e.eff, "promoted after 15 s of unpaused wait")
	sm.advance(5 * sec)
	assert.True(t, e.urgent)
	assert.Equal(t, epoch.Add(120*sec), e.urgentAt, "urgent after 20 s of wait, 100 s paused")
}
