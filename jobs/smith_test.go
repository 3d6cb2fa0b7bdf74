package jobs

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
