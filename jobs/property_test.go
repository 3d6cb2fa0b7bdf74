package jobs

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// admissible reports whether e passes every admission check now.
func (c *core) admissible(e *entry) bool {
	reason, _ := c.blocked(e)
	return reason == "" && c.nRunning < c.s.Slots && !e.grp.paused && e.grp.running < e.grp.cap
}

// fairLess is the fair order between the first jobs of two (key,
// effective tier) heads, written out plainly for one group: urgent jobs by
// when they became urgent, then effective tier, then the key's virtual
// time, then the arrival of the first job; inside one key, the in-key
// order.
func (c *core) fairLess(a, b *entry) bool {
	switch {
	case a.urgent != b.urgent:
		return a.urgent
	case a.urgent:
		if !a.urgentAt.Equal(b.urgentAt) {
			return a.urgentAt.Before(b.urgentAt)
		}
		return a.seq < b.seq
	case a.eff != b.eff:
		return a.eff > b.eff
	case a.key == b.key:
		return c.entryLess(a, b)
	case a.key.vt != b.key.vt:
		return a.key.vt < b.key.vt
	case !a.submitted.Equal(b.submitted):
		return a.submitted.Before(b.submitted)
	}
	return a.seq < b.seq
}

// oracle is the best admissible pending job by brute force, or nil: the
// best job of each (key, effective tier) by the in-key order, then the
// best of those.
func (c *core) oracle() *entry {
	type head struct {
		k   *fkey
		eff int
		urg bool
	}
	heads := map[head]*entry{}
	for _, js := range c.jobs {
		e := js.pending
		if e == nil || e.st == delayed || !c.admissible(e) {
			continue
		}
		h := head{e.key, e.eff, e.urgent}
		if e.urgent {
			h.k = nil // urgent jobs are one queue
		}
		if cur := heads[h]; cur == nil || c.fairLess(e, cur) {
			heads[h] = e
		}
	}
	var best *entry
	for _, e := range heads {
		if best == nil || c.fairLess(e, best) {
			best = e
		}
	}
	return best
}

// Properties under random load with tier caps, type caps, conflicts and
// aging, in one group: each admission is the best admissible job in the
// fair order (no priority inversion), no slot stays idle while a job is
// admissible (work conservation), and every job runs exactly once.
func TestAdmissionProperties(t *testing.T) {
	for seed := range uint64(6) {
		cfg := propertyConfig()
		if seed%2 == 1 {
			cfg.SmithFactor = DefaultSmithFactor
		}
		sm := newSim(t, cfg)
		urgent := 0
		sm.drive(t, rand.New(rand.NewPCG(seed, 7)), 1, nil, func(step int) *entry {
			want := sm.c.oracle()
			e := sm.c.next(sm.now)
			require.Equal(t, want == nil, e == nil, "seed %d step %d: work conservation", seed, step)
			if e != nil {
				require.Same(t, want, e, "seed %d step %d: %s/%s admitted, %s/%s is better",
					seed, step, e.tid.typ, e.tid.id, want.tid.typ, want.tid.id)
				if e.urgent {
					urgent++
				}
			}
			return e
		})
		t.Logf("seed %d: %d admitted urgent", seed, urgent)
	}
}

// With several groups (weights, minimums, caps, pauses and re-weighting
// at random) the order is the groups' business, but no slot stays idle
// while a job is admissible, and every job runs exactly once.
func TestWorkConservationWithGroups(t *testing.T) {
	for seed := range uint64(4) {
		cfg := propertyConfig()
		cfg.Groups = map[string]GroupConfig{"g0": {Weight: 3, Cap: 4}, "g1": {Weight: 1, Min: 1}, "g2": {Weight: 2, Cap: 2}}
		sm := newSim(t, cfg)
		rng := rand.New(rand.NewPCG(seed, 11))
		sm.drive(t, rng, 3, func() {
			g := sm.c.groups["g"+itoa(rng.IntN(3))]
			switch rng.IntN(10) {
			case 0:
				sm.c.setPaused(g, !g.paused, sm.now)
			case 1:
				sm.c.setWeight(g, 1+float64(rng.IntN(4)), sm.now)
			}
		}, func(step int) *entry {
			e := sm.c.next(sm.now)
			if e == nil {
				for _, js := range sm.c.jobs {
					if p := js.pending; p != nil && p.st != delayed && sm.c.nRunning < cfg.Slots {
						require.False(t, sm.c.admissible(p), "seed %d step %d: %s/%s admissible, slot idle",
							seed, step, p.tid.typ, p.tid.id)
					}
				}
			}
			return e
		})
	}
}

func propertyConfig() Config {
	return Config{
		Slots: 6,
		Tiers: []Tier{{Name: "bg", Cap: 3}, {Name: "mid", Cap: 4}, {Name: "fg"}},
		Types: map[JobType]TypeConfig{
			"clone":  {DefaultCost: 3 * sec, MaxConcurrency: 3, ConflictGroup: "git", Tier: "fg"},
			"fetch":  {DefaultCost: 2 * sec, ConflictGroup: "git", Tier: "mid"},
			"repack": {DefaultCost: 8 * sec, MaxConcurrency: 1, ConflictGroup: "git", Tier: "bg"},
			"export": {DefaultCost: sec, MaxConcurrency: 2, Tier: "bg"},
		},
		Aging:      Aging{Grace: 20 * sec, Interval: 10 * sec, Urgent: 3},
		KeyWeights: map[string]float64{"k0": 3},
	}
}

// drive submits random jobs over groups g0, g1, … for 500 seconds, one
// tick a second, calling perturb (if set) each tick; it admits through
// admit until that returns nil, runs until everything has finished, and
// checks that every job ran exactly once.
func (sm *sim) drive(t *testing.T, rng *rand.Rand, groups int, perturb func(), admit func(step int) *entry) {
	t.Helper()
	types := []JobType{"clone", "fetch", "repack", "export"}
	runs := map[*entry]int{}
	var all []*entry
	for step := 0; step < 500 || sm.c.nPending+sm.c.nRunning > 0; step++ {
		require.Less(t, step, 100000, "never drains")
		if step < 500 {
			for range rng.IntN(4) {
				typ := types[rng.IntN(len(types))]
				id := "repo" + itoa(rng.IntN(5))
				if typ == "export" {
					id = "x" + itoa(step) + "-" + itoa(len(all))
				}
				if js := sm.c.jobs[tid{typ, id}]; js != nil && js.current() != nil {
					continue // the Scheduler would join it
				}
				all = append(all, sm.add(typ, id, "k"+itoa(rng.IntN(4)), "g"+itoa(rng.IntN(groups)),
					1+float64(rng.IntN(3)), time.Duration(1+rng.IntN(12))*sec))
			}
			if perturb != nil {
				perturb()
			}
		} else {
			for _, g := range sm.c.glist {
				sm.c.setPaused(g, false, sm.now) // let it drain
			}
		}
		sm.tick()
		for e := admit(step); e != nil; e = admit(step) {
			runs[e]++
			sm.ends[e] = sm.now.Add(sm.durs[e])
		}
	}
	for _, e := range all {
		require.Equal(t, 1, runs[e], "%s/%s runs", e.tid.typ, e.tid.id)
	}
}
