package jobs

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

func TestAllocateDocumentExample(t *testing.T) {
	// 16 slots; A weight 3 cap 12; B weight 1 min 2 cap 6.
	var a allocator
	alloc, _, _ := a.allocate(16, []share{{weight: 3, limit: 12}, {weight: 1, min: 2, limit: 6}})
	assert.Equal(t, []int{10, 6}, alloc)
	// B has only 3 pending: A is held at its cap, one slot stays idle.
	alloc, _, _ = a.allocate(16, []share{{weight: 3, limit: 12}, {weight: 1, min: 2, limit: 3}})
	assert.Equal(t, []int{12, 3}, alloc)
	// Nothing to do, nothing allocated.
	alloc, _, _ = a.allocate(4, []share{{weight: 1, min: 2, limit: 0}})
	assert.Equal(t, []int{0}, alloc)
}

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

func TestSmithWorkedExample(t *testing.T) {
	cfg := Config{
		Slots:       1,
		SmithFactor: DefaultSmithFactor,
		Tiers:       []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{
			"blocker": {DefaultCost: sec, Tier: "t"},
			"A":       {DefaultCost: 100 * time.Millisecond, Tier: "t"},
			"B":       {DefaultCost: 5 * time.Millisecond, Tier: "t"},
			"C":       {DefaultCost: 10 * time.Millisecond, Tier: "t"},
		},
	}
	sm := newSim(t, cfg)
	sm.add("blocker", "x", "", "", 1, time.Millisecond)
	sm.dispatch()
	a := sm.add("A", "a", "", "", 1, 100*time.Millisecond)
	b := sm.add("B", "b", "", "", 1, 5*time.Millisecond)
	c := sm.add("C", "c", "", "", 2, 10*time.Millisecond)
	for range 200 {
		sm.advance(time.Millisecond)
	}
	require.Len(t, sm.started, 4)
	assert.Equal(t, []*entry{b, c, a}, sm.started[1:])
}

func TestSmithBeatsFIFO(t *testing.T) {
	types := map[JobType]TypeConfig{"blocker": {DefaultCost: sec, Tier: "t"}}
	rng := rand.New(rand.NewPCG(1, 2))
	type job struct {
		typ JobType
		w   float64
		d   time.Duration
	}
	var jobs []job
	for i := range 30 {
		name := JobType("t" + itoa(i))
		d := time.Duration(1+rng.IntN(200)) * time.Millisecond
		types[name] = TypeConfig{DefaultCost: d, Tier: "t"}
		jobs = append(jobs, job{name, float64(1 + rng.IntN(5)), d})
	}
	sm := newSim(t, Config{Slots: 1, SmithFactor: DefaultSmithFactor, Tiers: []Tier{{Name: "t"}}, Types: types})
	sm.add("blocker", "x", "", "", 1, time.Millisecond)
	sm.dispatch()
	weight := map[*entry]float64{}
	for _, j := range jobs {
		weight[sm.add(j.typ, "id", "", "", j.w, j.d)] = j.w
	}
	for len(sm.started) <= len(jobs) || len(sm.ends) > 0 {
		sm.advance(time.Millisecond)
	}
	var smith, fifo float64
	for e, w := range weight {
		smith += w * (sm.starts[e].Add(sm.durs[e]).Sub(epoch)).Seconds()
	}
	clock := time.Millisecond // the blocker
	for _, j := range jobs {
		clock += j.d
		fifo += j.w * clock.Seconds()
	}
	t.Logf("weighted completion time: smith %.3f s, fifo %.3f s", smith, fifo)
	assert.Less(t, smith, 0.8*fifo)
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

func TestReturningKeyStartsAtVirtualTime(t *testing.T) {
	sm := newSim(t, Config{Slots: 1, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}}})
	for i := range 5 {
		sm.add("j", "busy"+itoa(i), "busy", "", 1, sec)
	}
	for range 3 {
		sm.advance(sec)
	}
	late := sm.add("j", "late", "late", "", 1, sec)
	assert.Equal(t, sm.c.vnow, late.key.vt, "a new key starts at the system virtual time")
	sm.advance(sec)
	sm.advance(sec)
	assert.Greater(t, sm.at(late), 0.0)
}

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

func itoa(i int) string { return strconv.Itoa(i) }

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1)
	return families[0].GetMetric()[0].GetCounter().GetValue()
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

func TestDivertedJobPassesItsUnitOn(t *testing.T) {
	// A repack brought back when a repack slot frees, but blocked by a
	// clone of its repo, must let the next repack have the slot.
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
