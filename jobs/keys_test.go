package jobs

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// Point 2: two clients alternating serial jobs split the slot evenly. A
// client whose job just ended resubmits at once; it returns with its own
// finish tag, not the other client's, so it cannot jump the queue.
func TestAlternatingSerialClientsSplitEvenly(t *testing.T) {
	sm := newSim(t, oneType(1))
	out := map[string]*entry{}
	count := map[string]int{}
	submit := func(key string) { out[key] = sm.add("j", key+itoa(len(sm.started)), key, "", 1, sec) }
	submit("a")
	submit("b")
	sm.dispatch()
	for range 1000 {
		sm.now = sm.now.Add(sec)
		for e, end := range sm.ends {
			if !end.After(sm.now) {
				delete(sm.ends, e)
				sm.c.complete(e, sec, sm.now)
				count[e.key.name]++
				submit(e.key.name) // before the next admission decision
			}
		}
		sm.dispatch()
	}
	assert.InDelta(t, 500, count["a"], 1, count)
	assert.InDelta(t, 500, count["b"], 1, count)
}

// The lag bound: at every admission the key's start tag is at least
// V − MaxLag/weight, and a key that returns starts no earlier than V,
// under random blocking, tiers and idle periods.
func TestLagBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := wfqConfig()
	cfg.KeyWeights = map[string]float64{"k1": 2, "k2": 0.5}
	sm := newSim(t, cfg)
	types := []JobType{"sync-clone", "repack", "pull"}
	for step := range 3000 {
		for range rng.IntN(3) {
			key := "k" + itoa(rng.IntN(6))
			idle := sm.c.keys[key] == nil || sm.c.keys[key].idle()
			e := sm.add(types[rng.IntN(3)], "id"+itoa(rng.IntN(20))+"-"+itoa(step), key, "", 1,
				time.Duration(1+rng.IntN(20))*sec)
			if idle {
				require.GreaterOrEqual(t, e.key.vt, sm.c.vnow, "a returning key starts at V")
			}
		}
		sm.tick()
		for {
			v := sm.c.vnow
			e := sm.c.next(sm.now)
			if e == nil {
				break
			}
			require.GreaterOrEqual(t, e.startTag, v-sm.c.maxLag/e.key.weight-1e-9, "lag of key %s", e.key.name)
			sm.ends[e] = sm.now.Add(sm.durs[e])
			sm.started = append(sm.started, e)
		}
	}
	assert.Greater(t, len(sm.started), 1000)
}

// Keys of equal virtual time go in the order their jobs arrived, as the
// fair-queuing design sorts by (cost, arrival), not in the order the keys
// were first seen.
func TestEqualVirtualTimesGoByArrival(t *testing.T) {
	sm := newSim(t, oneType(1))
	sm.c.key("a", sm.now) // known first, idle
	sm.add("j", "blocker", "z", "", 1, 10*sec)
	sm.dispatch()
	sm.now = sm.now.Add(sec)
	b := sm.add("j", "b1", "b", "", 1, sec)
	sm.now = sm.now.Add(sec)
	a := sm.add("j", "a1", "a", "", 1, sec)
	require.Equal(t, a.key.vt, b.key.vt)
	for range 20 {
		sm.advance(sec)
	}
	assert.Equal(t, []*entry{b, a}, sm.started[1:])
}
