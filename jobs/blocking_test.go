package jobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTypeCapAndTierCapSkipWithoutBlocking(t *testing.T) {
	cfg := wfqConfig()
	cfg.Tiers[0].Cap = 8
	sm := newSim(t, cfg)
	// Five repacks: the type allows 3; pulls behind them still start.
	for i := range 5 {
		sm.add("repack", "r"+itoa(i), "", "", 1, 10*sec)
	}
	p := sm.add("pull", "p", "", "", 1, 10*sec)
	sm.dispatch()
	assert.Equal(t, 0.0, sm.at(p))
	assert.Equal(t, 4, sm.c.nRunning)
	snap := sm.c.snapshot(sm.now)
	blocked := map[string]int{}
	for _, pj := range snap.Pending {
		blocked[pj.Blocked]++
	}
	assert.Equal(t, map[string]int{"type cap": 2}, blocked)
}

func TestReleaseWakesOnlyWhatCanRun(t *testing.T) {
	sm := newSim(t, wfqConfig())
	for i := range 100 {
		sm.add("repack", "r"+itoa(i), "", "", 1, 10*sec)
	}
	sm.dispatch()
	blocked := func() int {
		n := 0
		for _, p := range sm.c.snapshot(sm.now).Pending {
			if p.Blocked == "type cap" {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 3, sm.c.nRunning)
	assert.Equal(t, 97, blocked())
	sm.advance(10 * sec) // three complete, three more start
	assert.Equal(t, 3, sm.c.nRunning)
	assert.Equal(t, 94, blocked(), "the others stay set aside")
	for range 400 {
		sm.advance(sec)
	}
	assert.Len(t, sm.started, 100, "all run in the end")
}

// A repack brought back when a repack slot frees, but blocked by a clone
// of its repo, does not hold the slot: the next repack takes it.
func TestConflictedJobDoesNotHoldTheTypeSlot(t *testing.T) {
	sm := newSim(t, wfqConfig())
	sm.add("repack", "busy0", "", "", 1, 5*sec)
	sm.add("repack", "busy1", "", "", 1, 50*sec)
	sm.add("repack", "busy2", "", "", 1, 50*sec)
	sm.dispatch()
	held := sm.add("repack", "repo1", "", "", 1, sec)
	next := sm.add("repack", "repo2", "", "", 1, sec)
	sm.dispatch() // both wait for the type cap
	clone := sm.add("sync-clone", "repo1", "dev", "", 1, 20*sec)
	sm.dispatch()
	require.Equal(t, 0.0, sm.at(clone))
	sm.advance(5 * sec) // one repack slot frees
	assert.Equal(t, 5.0, sm.at(next), "repo2 takes the slot repo1 cannot use")
	assert.Equal(t, -1.0, sm.at(held))
	for range 30 {
		sm.advance(sec)
	}
	assert.Equal(t, 20.0, sm.at(held), "repo1 runs once the clone is done")
}

// Point 1: when a type's cap frees, the best job waiting for it in the
// fair order starts, not the one set aside first: a light client goes
// before a heavy client's backlog.
func TestBlockedJobsComeBackInFairOrder(t *testing.T) {
	sm := newSim(t, Config{Slots: 4, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"x": {DefaultCost: sec, MaxConcurrency: 1, Tier: "t"}}})
	var heavy []*entry
	for i := range 10 {
		heavy = append(heavy, sm.add("x", "h"+itoa(i), "heavy", "", 1, sec))
	}
	sm.dispatch()
	sm.now = sm.now.Add(sec / 2)
	light := sm.add("x", "l", "light", "", 1, sec)
	sm.dispatch()
	sm.advance(sec / 2)
	require.Len(t, sm.started, 2)
	assert.Same(t, heavy[0], sm.started[0])
	assert.Same(t, light, sm.started[1], "the light client's job was set aside last but goes first")
}
