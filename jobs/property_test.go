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
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := Config{
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
		if seed%2 == 1 {
			cfg.SmithFactor = DefaultSmithFactor
		}
		sm := newSim(t, cfg)
		types := []JobType{"clone", "fetch", "repack", "export"}
		runs := map[*entry]int{}
		urgent := 0
		var all []*entry
		for step := 0; step < 500 || sm.c.nPending+sm.c.nRunning > 0; step++ {
			require.Less(t, step, 100000, "seed %d: never drains", seed)
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
					all = append(all, sm.add(typ, id, "k"+itoa(rng.IntN(4)), "", 1+float64(rng.IntN(3)),
						time.Duration(1+rng.IntN(12))*sec))
				}
			}
			sm.tick()
			for {
				want := sm.c.oracle()
				e := sm.c.next(sm.now)
				require.Equal(t, want == nil, e == nil, "seed %d step %d: work conservation", seed, step)
				if e == nil {
					break
				}
				require.Same(t, want, e, "seed %d step %d: %s/%s admitted, %s/%s is better",
					seed, step, e.tid.typ, e.tid.id, want.tid.typ, want.tid.id)
				runs[e]++
				if e.urgent {
					urgent++
				}
				sm.ends[e] = sm.now.Add(sm.durs[e])
			}
		}
		t.Logf("seed %d: %d jobs, %d admitted urgent", seed, len(all), urgent)
		for _, e := range all {
			require.Equal(t, 1, runs[e], "seed %d: %s/%s runs", seed, e.tid.typ, e.tid.id)
		}
	}
}
