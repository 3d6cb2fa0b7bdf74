package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroupAllocationExampleAdmits(t *testing.T) {
	for _, tc := range []struct {
		pendingB       int
		allocA, allocB int
		idle           int
	}{{pendingB: 200, allocA: 10, allocB: 6}, {pendingB: 3, allocA: 12, allocB: 3, idle: 1}} {
		cfg := Config{
			Slots:  16,
			Tiers:  []Tier{{Name: "low"}},
			Types:  map[JobType]TypeConfig{"sync": {DefaultCost: sec, Tier: "low"}},
			Groups: map[string]GroupConfig{"A": {Weight: 3, Cap: 12}, "B": {Weight: 1, Min: 2, Cap: 6}},
		}
		sm := newSim(t, cfg)
		for i := range 300 {
			sm.add("sync", "a"+itoa(i), "profileA", "A", 1, time.Hour)
		}
		for i := range tc.pendingB {
			sm.add("sync", "b"+itoa(i), "profileB", "B", 1, time.Hour)
		}
		sm.dispatch()
		snap := sm.c.snapshot(sm.now)
		alloc := map[string]int{}
		run := map[string]int{}
		for _, g := range snap.Groups {
			alloc[g.Name], run[g.Name] = g.Allocation, g.Running
		}
		assert.Equal(t, tc.allocA, alloc["A"])
		assert.Equal(t, tc.allocB, alloc["B"])
		assert.Equal(t, 16-tc.idle, snap.Running)
		if tc.idle > 0 {
			assert.Equal(t, map[string]int{"A": 12, "B": 3}, run)
		} else {
			// Each group holds at least the whole part of its exact share
			// (A 10.5, B 5.5); the half slots are contended by key.
			assert.GreaterOrEqual(t, run["A"], 10)
			assert.GreaterOrEqual(t, run["B"], 5)
		}
	}
}

func TestFractionalSharesTakeTurns(t *testing.T) {
	// 40 equal groups on 16 slots: each one's share is 0.4 slot, which
	// rounding alone would give to 16 groups forever.
	sm := newSim(t, Config{Slots: 16, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}}})
	for g := range 40 {
		for i := range 5 {
			sm.add("j", itoa(g)+"/"+itoa(i), "k"+itoa(g), "g"+itoa(g), 1, sec)
		}
	}
	sm.dispatch()
	for range 3 {
		sm.advance(sec)
	}
	first := map[string]float64{} // sm.started is in admission order
	for _, e := range sm.started {
		if _, ok := first[e.grp.name]; !ok {
			first[e.grp.name] = sm.at(e)
		}
	}
	require.Len(t, first, 40, "every group ran within three rounds")
	for g, at := range first {
		assert.LessOrEqual(t, at, 2.0, "group %s waited for its first slot", g)
	}
}

func TestPausedGroupReleasesItsShare(t *testing.T) {
	cfg := Config{Slots: 4, Tiers: []Tier{{Name: "t"}},
		Types:  map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}},
		Groups: map[string]GroupConfig{"A": {Weight: 1}, "B": {Weight: 1}}}
	sm := newSim(t, cfg)
	sm.c.groups["B"].paused = true
	sm.c.allocDirty = true
	for i := range 10 {
		sm.add("j", "a"+itoa(i), "a", "A", 1, 10*sec)
		sm.add("j", "b"+itoa(i), "b", "B", 1, 10*sec)
	}
	sm.dispatch()
	snap := sm.c.snapshot(sm.now)
	assert.Equal(t, 4, snap.Groups[0].Running)
	assert.Equal(t, 4, snap.Groups[0].Allocation)
	assert.Equal(t, 0, snap.Groups[1].Allocation)
}

// Point 6: the document's example with the groups' jobs in different
// tiers still gives A 10 slots and B 6, the largest-remainder rounding of
// 10.5 and 5.5: the half slot is B's, not taken by A's higher tier.
func TestGroupsAtDifferentTiersFollowTheDocument(t *testing.T) {
	cfg := Config{
		Slots: 16,
		Tiers: []Tier{{Name: "low"}, {Name: "high"}},
		Types: map[JobType]TypeConfig{
			"hi": {DefaultCost: sec, Tier: "high"},
			"lo": {DefaultCost: sec, Tier: "low"},
		},
		Groups: map[string]GroupConfig{"A": {Weight: 3, Cap: 12}, "B": {Weight: 1, Min: 2, Cap: 6}},
	}
	for _, types := range [][2]JobType{{"hi", "lo"}, {"lo", "hi"}} {
		sm := newSim(t, cfg)
		for i := range 100 {
			sm.add(types[0], "a"+itoa(i), "a", "A", 1, time.Hour)
			sm.add(types[1], "b"+itoa(i), "b", "B", 1, time.Hour)
		}
		sm.dispatch()
		run := map[string]int{}
		for _, g := range sm.c.snapshot(sm.now).Groups {
			run[g.Name] = g.Running
		}
		assert.Equal(t, map[string]int{"A": 10, "B": 6}, run, "A's jobs %s, B's %s", types[0], types[1])
	}
}

// Point 6: ResetGroupWeights returns every group to equal weights.
func TestResetGroupWeightsGivesEqualWeights(t *testing.T) {
	cfg := oneType(4)
	cfg.Groups = map[string]GroupConfig{"A": {Weight: 3}, "B": {Weight: 1}}
	fs := newFakeSched(t, cfg)
	require.NoError(t, fs.SetGroupWeight("C", 5))
	fs.ResetGroupWeights()
	for _, g := range fs.Snapshot().Groups {
		assert.Equal(t, 1.0, g.Weight, g.Name)
	}
	require.NoError(t, fs.Close())
}

// Weights are respected over long runs: groups 3:1 split admissions
// within 5% of 75/25, and so do keys weighted 2:1 inside one group.
func TestWeightsRespectedOverLongRuns(t *testing.T) {
	cfg := oneType(8)
	cfg.Groups = map[string]GroupConfig{"A": {Weight: 3}, "B": {Weight: 1}}
	cfg.KeyWeights = map[string]float64{"heavy": 2}
	sm := newSim(t, cfg)
	n := 0
	// Every key stays backlogged: shares follow the weights, not supply.
	top := func() {
		for _, kg := range [][2]string{{"heavy", "A"}, {"light", "A"}, {"b", "B"}} {
			for sm.c.keys[kg[0]] == nil || sm.c.keys[kg[0]].pending < 20 {
				n++
				sm.add("j", itoa(n), kg[0], kg[1], 1, sec)
			}
		}
	}
	top()
	sm.dispatch()
	for range 2000 {
		top()
		sm.advance(sec)
	}
	count := map[string]float64{}
	for _, e := range sm.started {
		count[e.key.name]++
	}
	total := count["heavy"] + count["light"] + count["b"]
	assert.InDelta(t, 0.75, (count["heavy"]+count["light"])/total, 0.05*0.75, count)
	assert.InDelta(t, 2.0/3, count["heavy"]/(count["heavy"]+count["light"]), 0.05*2/3, count)
}
