package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTTLForgetsIdleKeysAndEstimates(t *testing.T) {
	sm := newSim(t, Config{Slots: 1, Tiers: []Tier{{Name: "t"}}, TTL: time.Minute,
		Types: map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}}})
	sm.add("j", "x", "client", "", 1, 2*sec)
	sm.dispatch()
	sm.advance(2 * sec)
	require.Contains(t, sm.c.keys, "client")
	js := sm.c.jobs[tid{"j", "x"}]
	require.NotNil(t, js)
	assert.InDelta(t, 2, js.est, 1e-9, "the first run replaces the default")
	sm.advance(30 * sec)
	assert.Contains(t, sm.c.keys, "client", "not idle for a TTL yet")
	sm.advance(40 * sec)
	assert.NotContains(t, sm.c.keys, "client")
	assert.Empty(t, sm.c.jobs)
	assert.True(t, sm.c.wake().After(sm.now) || sm.c.wake().IsZero())
}

// Point 4: the first run replaces the default estimate; smoothing starts
// with the second.
func TestFirstRunReplacesTheDefaultCost(t *testing.T) {
	sm := newSim(t, Config{Slots: 1, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"j": {DefaultCost: 100 * sec, Tier: "t"}}})
	sm.add("j", "x", "", "", 1, 50*time.Millisecond)
	sm.dispatch()
	sm.advance(50 * time.Millisecond)
	js := sm.c.jobs[tid{"j", "x"}]
	assert.InDelta(t, 0.05, js.est, 1e-9)
	sm.add("j", "x", "", "", 1, 150*time.Millisecond)
	sm.dispatch()
	sm.advance(150 * time.Millisecond)
	assert.InDelta(t, 0.3*0.15+0.7*0.05, js.est, 1e-9)
}

// Point 8: a TTL of 1 ns sweeps at most once a second instead of waking
// the scheduler without pause.
func TestTinyTTLDoesNotSpin(t *testing.T) {
	cfg := oneType(1)
	cfg.TTL = time.Nanosecond
	sm := newSim(t, cfg)
	sm.add("j", "x", "k", "", 1, sec)
	sm.dispatch()
	assert.Equal(t, sm.now.Add(time.Second), sm.c.wake())
	sm.advance(sec)
	sm.advance(time.Nanosecond)
	assert.Equal(t, sm.now.Add(time.Second-time.Nanosecond), sm.c.wake())
	sm.advance(sec)
	assert.Empty(t, sm.c.keys, "the idle key is forgotten at the next sweep")
}
