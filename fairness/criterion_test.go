package fairness

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCriterionErrors(t *testing.T) {
	o, other := NewOrder(), NewOrder()
	a, x := o.New("a"), other.New("x")
	cases := []struct {
		name    string
		o       *Order
		weights map[Priority]float64
		want    error
	}{
		{"nil order", nil, map[Priority]float64{a: 1}, ErrForeignPriority},
		{"empty", o, nil, ErrZeroWeights},
		{"all zero", o, map[Priority]float64{a: 0, o.Top(): 0}, ErrZeroWeights},
		{"negative", o, map[Priority]float64{a: -1}, ErrNegativeWeight},
		{"NaN", o, map[Priority]float64{a: math.NaN()}, ErrNegativeWeight},
		{"+Inf", o, map[Priority]float64{a: math.Inf(1)}, ErrNegativeWeight},
		{"-Inf", o, map[Priority]float64{a: math.Inf(-1)}, ErrNegativeWeight},
		{"overflowing sum", o, map[Priority]float64{a: math.MaxFloat64, o.Top(): math.MaxFloat64}, ErrNegativeWeight},
		{"foreign", o, map[Priority]float64{a: 1, x: 1}, ErrForeignPriority},
		{"zero priority", o, map[Priority]float64{a: 1, {}: 1}, ErrForeignPriority},
	}
	for _, tc := range cases {
		c, err := NewCriterion(tc.o, tc.weights)
		assert.ErrorIs(t, err, tc.want, tc.name)
		assert.Nil(t, c, tc.name)
	}
	_, err := NewCriterion(o, map[Priority]float64{a: -2})
	assert.Contains(t, err.Error(), "a")

	late := o.New("late") // o is frozen by now
	_, err = NewCriterion(o, map[Priority]float64{a: 1, late: 1})
	assert.ErrorIs(t, err, ErrForeignPriority)
	assert.Contains(t, err.Error(), "late")
}

func TestSharesAndStretches(t *testing.T) {
	o := NewOrder()
	ui, plan, batch := o.New("ui"), o.New("plan"), o.New("batch")
	require.NoError(t, o.Less(batch, plan))
	require.NoError(t, o.Less(plan, ui))
	c, err := NewCriterion(o, map[Priority]float64{ui: 2, plan: 1, batch: 1})
	require.NoError(t, err)
	assert.Same(t, o, c.Order())
	assert.Equal(t, 5, c.Len())
	assert.InDelta(t, 0.5, c.Share(ui), 1e-12)
	assert.InDelta(t, 0.25, c.Share(plan), 1e-12)
	assert.InDelta(t, 2, c.Stretch(ui), 1e-12)
	assert.InDelta(t, 4, c.Stretch(plan), 1e-12)
	assert.InDelta(t, 4, c.Stretch(batch), 1e-12)
	assert.Zero(t, c.Share(o.Top()))
	assert.True(t, math.IsInf(c.Stretch(o.Bottom()), 1))
	assert.Zero(t, c.Share(NewOrder().Top()), "foreign")
	assert.Zero(t, c.Share(o.New("late")), "no rank")

	r, _ := o.Rank(ui)
	assert.InDelta(t, 0.5, c.ShareByRank(r), 1e-12)
	assert.Zero(t, c.ShareByRank(-1))
	assert.Zero(t, c.ShareByRank(c.Len()))
	var sum float64
	for r := range c.Len() {
		sum += c.ShareByRank(r)
	}
	assert.InDelta(t, 1, sum, 1e-12)
	assert.Equal(t, "ui=50% plan=25% batch=25%", c.String())
}

func TestUniform(t *testing.T) {
	o := NewOrder()
	a := o.New("a")
	c := Uniform(o)
	for _, p := range o.Priorities() {
		assert.InDelta(t, 1.0/3, c.Share(p), 1e-12, "%v", p)
	}
	assert.ErrorIs(t, o.Less(a, o.Top()), ErrFrozen)
	assert.Equal(t, "top=33.33% a=33.33% bottom=33.33%", c.String())
}

// TestSamplerFrequencies draws 1e6 ranks per distribution and checks every rank's count
// against its expectation within 5 standard deviations; zero shares must never be drawn.
func TestSamplerFrequencies(t *testing.T) {
	const n = 1_000_000
	dists := [][]float64{
		{1},
		{1, 1},
		{50, 25, 25},
		{0, 3, 0, 1, 0},
		{1e-3, 1, 0, 100, 7, 0.5, 0, 2},
		{0, 0, 0, 1},
	}
	for i, weights := range dists {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			o := NewOrder()
			w := map[Priority]float64{}
			for j, x := range weights {
				w[o.New(fmt.Sprint("p", j))] = x
			}
			c, err := NewCriterion(o, w)
			require.NoError(t, err)
			counts := make([]int, c.Len())
			s := c.NewSampler(uint64(i) + 1)
			for range n {
				counts[s.Rank()]++
			}
			for r, k := range counts {
				p := c.ShareByRank(r)
				if p == 0 {
					require.Zero(t, k, "rank %d has share 0", r)
					continue
				}
				mean, sd := n*p, math.Sqrt(n*p*(1-p))
				assert.InDelta(t, mean, float64(k), 5*sd+1, "rank %d share %v", r, p)
			}
		})
	}
}

func TestSamplerSeeds(t *testing.T) {
	o := NewOrder()
	o.New("a")
	o.New("b")
	c := Uniform(o)
	draw := func(seed uint64) []int {
		s := c.NewSampler(seed)
		out := make([]int, 64)
		for i := range out {
			out[i] = s.Rank()
		}
		return out
	}
	assert.Equal(t, draw(7), draw(7), "same seed, same stream")
	assert.NotEqual(t, draw(7), draw(8))
	assert.NotEqual(t, draw(0), draw(1))
}

func TestSamplerNoAlloc(t *testing.T) {
	s := Uniform(NewOrder()).NewSampler(3)
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Rank() }))
}

func BenchmarkSamplerRank(b *testing.B) {
	o := NewOrder()
	w := map[Priority]float64{}
	for i := range 8 {
		w[o.New(fmt.Sprint(i))] = float64(i)
	}
	c, err := NewCriterion(o, w)
	require.NoError(b, err)
	s := c.NewSampler(1)
	for b.Loop() {
		s.Rank()
	}
}

func ExampleNewCriterion() {
	o := NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	_ = o.Less(batch, ui)
	c, err := NewCriterion(o, map[Priority]float64{ui: 75, batch: 25})
	if err != nil {
		panic(err)
	}
	fmt.Println(c)
	fmt.Println(c.Share(batch), c.Stretch(batch))
	// Output:
	// ui=75% batch=25%
	// 0.25 4
}
