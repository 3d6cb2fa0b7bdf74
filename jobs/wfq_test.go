package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sec = time.Second

// wfqConfig is the standard configuration of the WFQ document's
// simulation: 8 slots, foreground clones over background repacks and
// pulls capped at 4, all in the "git" conflict group.
func wfqConfig() Config {
	return Config{
		Slots: 8,
		Tiers: []Tier{{Name: "bg", Cap: 4}, {Name: "fg", Cap: 8}},
		Types: map[JobType]TypeConfig{
			"sync-clone": {DefaultCost: 10 * sec, MaxConcurrency: 8, ConflictGroup: "git", Tier: "fg"},
			"repack":     {DefaultCost: 20 * sec, MaxConcurrency: 3, ConflictGroup: "git", Tier: "bg"},
			"pull":       {DefaultCost: 10 * sec, MaxConcurrency: 3, ConflictGroup: "git", Tier: "bg"},
		},
	}
}

// Scenario 1: foreground starts at once although background saturates its
// tier, also when the background has aged into the foreground tier: an
// aged job still counts against its own tier's cap.
func TestWFQForegroundDespiteBackground(t *testing.T) {
	for _, aging := range []Aging{{}, {Grace: sec, Interval: sec}} {
		cfg := wfqConfig()
		cfg.Aging = aging
		sm := newSim(t, cfg)
		for i := 1; i <= 6; i++ {
			sm.add("repack", "r"+itoa(i), "", "", 1, 8*sec)
		}
		for i := 7; i <= 10; i++ {
			sm.add("pull", "r"+itoa(i), "", "", 1, 6*sec)
		}
		sm.dispatch()
		assert.Equal(t, 4, sm.c.nRunning, "background holds only its tier cap")
		var fg *entry
		for tick := 1; tick <= 30; tick++ {
			if tick == 3 {
				if aging.Interval > 0 {
					assert.Equal(t, "fg", sm.c.snapshot(sm.now).Pending[0].EffectiveTier)
				}
				fg = sm.add("sync-clone", "r99", "dev1", "", 1, 2*sec)
			}
			sm.advance(sec)
		}
		assert.Equal(t, 3.0, sm.at(fg))
		assert.Len(t, sm.started, 11)
	}
}

// Scenario 2: a light client is not starved by a bursting one.
func TestWFQLightClientNotStarved(t *testing.T) {
	cfg := wfqConfig()
	// Estimates that match the run times, as they do once learned: the
	// charge then needs no correction at completion.
	cfg.Types["sync-clone"] = TypeConfig{DefaultCost: 3 * sec, MaxConcurrency: 8, ConflictGroup: "git", Tier: "fg"}
	sm := newSim(t, cfg)
	for i := 1; i <= 4; i++ {
		sm.add("repack", "repo"+itoa(i), "", "", 1, 6*sec)
	}
	sm.dispatch()
	var as, bs []*entry
	for tick := 1; tick <= 40; tick++ {
		switch tick {
		case 1:
			for i := 1; i <= 10; i++ {
				as = append(as, sm.add("sync-clone", "a"+itoa(i), "clientA", "", 1, 3*sec))
			}
		case 2:
			bs = append(bs, sm.add("sync-clone", "b1", "clientB", "", 1, 3*sec))
			bs = append(bs, sm.add("sync-clone", "b2", "clientB", "", 1, 3*sec))
		}
		sm.advance(sec)
	}
	require.Len(t, sm.started, 16)
	// A burst into the free slots first; B goes at the first slots that
	// free after it arrived, ahead of the rest of A's burst.
	firstFree := sm.at(as[0]) + 3
	for _, b := range bs {
		assert.Equal(t, firstFree, sm.at(b))
	}
	assert.Greater(t, sm.at(as[9]), firstFree)
}

// Scenario 3: a client whose jobs cost more gets fewer of them.
func TestWFQCostAware(t *testing.T) {
	sm := newSim(t, Config{
		Slots: 1,
		Tiers: []Tier{{Name: "fg"}},
		Types: map[JobType]TypeConfig{"sync-clone": {DefaultCost: 10 * sec, Tier: "fg"}},
	})
	// What earlier runs taught the scheduler.
	learn := func(id string, secs float64) { *sm.c.job(tid{"sync-clone", id}) = jobState{est: secs, known: true} }
	learn("linux", 100)
	learn("linux2", 100)
	for i := 1; i <= 8; i++ {
		learn("small"+itoa(i), 5)
	}
	big1 := sm.add("sync-clone", "linux", "clientA", "", 1, 100*sec)
	big2 := sm.add("sync-clone", "linux2", "clientA", "", 1, 100*sec)
	var small []*entry
	for i := 1; i <= 8; i++ {
		small = append(small, sm.add("sync-clone", "small"+itoa(i), "clientB", "", 1, 5*sec))
	}
	for range 400 {
		sm.advance(sec)
	}
	require.Len(t, sm.started, 10)
	assert.Equal(t, big1, sm.started[0])
	assert.Equal(t, small, sm.started[1:9], "eight cheap clones cost what one expensive one does")
	assert.Equal(t, big2, sm.started[9])
}

// Scenario 4: conflicting jobs never overlap; different ids run in
// parallel.
func TestWFQConflicts(t *testing.T) {
	sm := newSim(t, wfqConfig())
	c1 := sm.add("sync-clone", "repo1", "dev1", "", 1, 3*sec)
	r1 := sm.add("repack", "repo1", "", "", 1, 4*sec)
	c2 := sm.add("sync-clone", "repo2", "dev2", "", 1, 3*sec)
	r2 := sm.add("repack", "repo2", "", "", 1, 4*sec)
	sm.dispatch()
	for range 20 {
		sm.advance(sec)
	}
	assert.Equal(t, 0.0, sm.at(c1))
	assert.Equal(t, 0.0, sm.at(c2), "different ids run in parallel")
	assert.Equal(t, 3.0, sm.at(r1), "the repack waits for the clone of the same repo")
	assert.Equal(t, 3.0, sm.at(r2))
	var log []string
	for _, e := range sm.started {
		log = append(log, string(e.tid.typ)+"("+e.tid.id+")@"+itoa(int(sm.at(e))))
	}
	t.Log(log)
}

// Scenario 5: many background types do not starve the foreground.
func TestWFQManyBackgroundTypes(t *testing.T) {
	cfg := Config{Slots: 8, Tiers: []Tier{{Name: "bg", Cap: 4}, {Name: "fg", Cap: 8}},
		Types: map[JobType]TypeConfig{"sync-clone": {DefaultCost: 10 * sec, MaxConcurrency: 8, ConflictGroup: "git", Tier: "fg"}}}
	bgTypes := []JobType{"repack", "pull", "gc", "verify"}
	for _, bt := range bgTypes {
		cfg.Types[bt] = TypeConfig{DefaultCost: 15 * sec, MaxConcurrency: 4, ConflictGroup: "git", Tier: "bg"}
	}
	sm := newSim(t, cfg)
	for _, bt := range bgTypes {
		for i := 1; i <= 3; i++ {
			sm.add(bt, string(bt)+itoa(i), "", "", 1, 6*sec)
		}
	}
	sm.dispatch()
	var fg []*entry
	for tick := 1; tick <= 40; tick++ {
		if tick == 2 {
			for i := 1; i <= 4; i++ {
				fg = append(fg, sm.add("sync-clone", "clone"+itoa(i), "clientA", "", 1, 2*sec))
			}
		}
		sm.advance(sec)
	}
	for _, e := range fg {
		assert.Equal(t, 2.0, sm.at(e))
	}
	assert.Len(t, sm.started, 16)
}

// The document's scenario 1, admission by admission: inside the
// background key jobs go in submission order (repacks before pulls),
// skipping the type-capped ones, and the late clone starts at once.
func TestWFQScenario1Log(t *testing.T) {
	sm := newSim(t, wfqConfig())
	for i := 1; i <= 6; i++ {
		sm.add("repack", "r"+itoa(i), "", "", 1, 8*sec)
	}
	for i := 7; i <= 10; i++ {
		sm.add("pull", "r"+itoa(i), "", "", 1, 6*sec)
	}
	sm.dispatch()
	for tick := 1; tick <= 25; tick++ {
		if tick == 3 {
			sm.add("sync-clone", "r99", "dev1", "", 1, 2*sec)
		}
		sm.advance(sec)
	}
	assert.Equal(t, []string{"0: r1 r2 r3 r7", "3: r99", "6: r8", "8: r4 r5 r6", "12: r9", "16: r10"}, sm.admissions())
}

// The document's scenario 2: client B, new at t=2, starts at the system
// virtual time (0 here, the start tag of the oldest running job), so
// both its clones go before the rest of A's burst.
func TestWFQScenario2Log(t *testing.T) {
	sm := newSim(t, wfqConfig())
	for i := 1; i <= 4; i++ {
		sm.add("repack", "repo"+itoa(i), "", "", 1, 6*sec)
	}
	sm.dispatch()
	for tick := 1; tick <= 30; tick++ {
		switch tick {
		case 1:
			for i := 1; i <= 10; i++ {
				sm.add("sync-clone", "a"+itoa(i), "clientA", "", 1, 3*sec)
			}
		case 2:
			sm.add("sync-clone", "b1", "clientB", "", 1, 3*sec)
			sm.add("sync-clone", "b2", "clientB", "", 1, 3*sec)
		}
		sm.advance(sec)
	}
	assert.Equal(t, []string{"0: repo1 repo2 repo3", "1: a1 a2 a3 a4 a5", "4: b1 b2 a6 a7 a8", "6: a9 a10 repo4"}, sm.admissions())
}
