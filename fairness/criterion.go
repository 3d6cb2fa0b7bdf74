package fairness

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Criterion is a fairness criterion: the share of processor time each priority of a frozen
// order is guaranteed while it has work. Shares are non-negative and sum to 1. A Criterion is
// immutable and safe for concurrent use.
type Criterion struct {
	o      *Order
	snap   *snapshot
	shares []float64 // by rank

	// Walker/Vose alias table over the ranks with a positive share, so a rank with share 0
	// can never be drawn: column j yields ranks[j] if the low 32 random bits are below
	// thresh[j], else ranks[alias[j]].
	ranks  []int32
	thresh []uint64
	alias  []int32
}

// NewCriterion freezes o and builds the criterion giving each priority a share proportional to
// its weight; priorities missing from weights get share 0. Weights must be finite and
// non-negative (ErrNegativeWeight) and not all zero (ErrZeroWeights). Keys that are zero,
// belong to another order, or were created after o was frozen fail with ErrForeignPriority, as
// does a nil order.
func NewCriterion(o *Order, weights map[Priority]float64) (*Criterion, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: nil order", ErrForeignPriority)
	}
	s := o.freeze()
	keys := make([]Priority, 0, len(weights))
	for p := range weights {
		keys = append(keys, p)
	}
	// Check in a fixed order so the reported error is deterministic.
	slices.SortFunc(keys, func(a, b Priority) int { return cmp.Compare(a.id, b.id) })
	shares := make([]float64, len(s.order))
	var sum float64
	for _, p := range keys {
		w := weights[p]
		if !o.Contains(p) {
			return nil, fmt.Errorf("%w: %v is not in this order", ErrForeignPriority, p)
		}
		r, ok := s.rankOf(p.id)
		if !ok {
			return nil, fmt.Errorf("%w: %v was created after the order was frozen", ErrForeignPriority, p)
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("%w: %v has weight %v", ErrNegativeWeight, p, w)
		}
		shares[r] = w
		sum += w
	}
	if sum == 0 {
		return nil, ErrZeroWeights
	}
	if math.IsInf(sum, 0) {
		return nil, fmt.Errorf("%w: weights overflow when summed", ErrNegativeWeight)
	}
	for r := range shares {
		shares[r] /= sum
	}
	c := &Criterion{o: o, snap: s, shares: shares}
	c.buildAlias()
	return c, nil
}

// Uniform returns the criterion giving every priority of o an equal share, Top and Bottom
// included. It freezes o, which must not be nil.
func Uniform(o *Order) *Criterion {
	s := o.freeze()
	shares := make([]float64, len(s.order))
	for r := range shares {
		shares[r] = 1 / float64(len(shares))
	}
	c := &Criterion{o: o, snap: s, shares: shares}
	c.buildAlias()
	return c
}

// buildAlias builds the alias table with Vose's algorithm.
func (c *Criterion) buildAlias() {
	for r, sh := range c.shares {
		if sh > 0 {
			c.ranks = append(c.ranks, int32(r))
		}
	}
	k := len(c.ranks)
	c.thresh = make([]uint64, k)
	c.alias = make([]int32, k)
	scaled := make([]float64, k)
	var small, large []int32
	for j, r := range c.ranks {
		scaled[j] = c.shares[r] * float64(k)
		if scaled[j] < 1 {
			small = append(small, int32(j))
		} else {
			large = append(large, int32(j))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		l, g := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		c.thresh[l] = uint64(max(scaled[l], 0) * (1 << 32)) // rounding can leave a tiny negative
		c.alias[l] = g
		if scaled[g] += scaled[l] - 1; scaled[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	// Leftovers are 1 up to rounding error: their column always yields themselves.
	for _, j := range append(small, large...) {
		c.thresh[j] = 1 << 32
		c.alias[j] = j
	}
}

// Order returns the order the criterion was built for.
func (c *Criterion) Order() *Order { return c.o }

// Len returns the number of ranks, that is the number of priorities frozen into the order.
func (c *Criterion) Len() int { return len(c.shares) }

// Share returns p's share of processor time, in [0, 1]. It is 0 for a priority without a rank.
func (c *Criterion) Share(p Priority) float64 {
	if !c.o.Contains(p) {
		return 0
	}
	r, ok := c.snap.rankOf(p.id)
	if !ok {
		return 0
	}
	return c.shares[r]
}

// ShareByRank returns the share of the priority at rank r of the frozen order, or 0 if r is
// out of range.
func (c *Criterion) ShareByRank(r int) float64 {
	if r < 0 || r >= len(c.shares) {
		return 0
	}
	return c.shares[r]
}

// Stretch returns 1/Share(p): how many times slower than on a dedicated machine p may run
// while every priority has work. It is +Inf for a share of 0.
func (c *Criterion) Stretch(p Priority) float64 {
	if sh := c.Share(p); sh > 0 {
		return 1 / sh
	}
	return math.Inf(1)
}

// String lists the priorities with a positive share, highest rank first, as "ui=50% batch=50%".
func (c *Criterion) String() string {
	var b strings.Builder
	for r := len(c.shares) - 1; r >= 0; r-- {
		if c.shares[r] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.snap.order[r].String())
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(100*c.shares[r], 'g', 4, 64))
		b.WriteByte('%')
	}
	return b.String()
}

// Sampler draws ranks from a criterion's distribution in O(1) without allocating. It keeps its
// own pseudo-random state and is meant to be owned by one worker: it is not safe for
// concurrent use.
type Sampler struct {
	c     *Criterion
	state uint64
}

// NewSampler returns a sampler whose stream is determined by seed.
func (c *Criterion) NewSampler(seed uint64) *Sampler {
	return &Sampler{c: c, state: seed}
}

// Rank draws a rank with probability equal to its share. A rank with share 0 is never drawn.
func (s *Sampler) Rank() int {
	// splitmix64
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	c := s.c
	j := (z >> 32) * uint64(len(c.ranks)) >> 32 // high bits pick the column
	if z&(1<<32-1) < c.thresh[j] {
		return int(c.ranks[j])
	}
	return int(c.ranks[c.alias[j]])
}
