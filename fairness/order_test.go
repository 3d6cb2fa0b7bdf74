package fairness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diamond builds bottom < lo < {left, right} < hi < top.
func diamond(t *testing.T) (o *Order, lo, left, right, hi Priority) {
	t.Helper()
	o = NewOrder()
	lo, left, right, hi = o.New("lo"), o.New("left"), o.New("right"), o.New("hi")
	require.NoError(t, o.Less(lo, left))
	require.NoError(t, o.Less(lo, right))
	require.NoError(t, o.Less(left, hi))
	require.NoError(t, o.Less(right, hi))
	return
}

func TestDiamond(t *testing.T) {
	o, lo, left, right, hi := diamond(t)
	all := []Priority{o.Bottom(), lo, left, right, hi, o.Top()}
	for _, p := range all {
		assert.True(t, o.LessEq(p, p), "reflexive %v", p)
		assert.True(t, o.LessEq(o.Bottom(), p))
		assert.True(t, o.LessEq(p, o.Top()))
	}
	assert.True(t, o.LessEq(lo, hi), "transitive")
	assert.False(t, o.LessEq(hi, lo))
	assert.False(t, o.LessEq(left, right), "incomparable")
	assert.False(t, o.LessEq(right, left), "incomparable")
	assert.NoError(t, o.Less(lo, hi), "already implied")
	assert.NoError(t, o.Less(left, o.Top()), "implied by Top")
	assert.NoError(t, o.Less(o.Bottom(), right), "implied by Bottom")

	// The same answers from the frozen snapshot.
	before := map[[2]Priority]bool{}
	for _, a := range all {
		for _, b := range all {
			before[[2]Priority{a, b}] = o.LessEq(a, b)
		}
	}
	order := o.Freeze()
	require.Equal(t, []Priority{o.Bottom(), lo, left, right, hi, o.Top()}, order)
	for k, v := range before {
		assert.Equal(t, v, o.LessEq(k[0], k[1]), "%v ⪯ %v after Freeze", k[0], k[1])
	}
}

func TestCycles(t *testing.T) {
	o := NewOrder()
	a, b := o.New("a"), o.New("b")
	cases := []struct {
		name string
		x, y Priority
	}{
		{"self", a, a},
		{"top below", o.Top(), a},
		{"below bottom", a, o.Bottom()},
		{"top below bottom", o.Top(), o.Bottom()},
		{"top self", o.Top(), o.Top()},
	}
	for _, tc := range cases {
		err := o.Less(tc.x, tc.y)
		assert.ErrorIs(t, err, ErrCycle, tc.name)
	}
	require.NoError(t, o.Less(a, b))
	err := o.Less(b, a)
	require.ErrorIs(t, err, ErrCycle)
	assert.Contains(t, err.Error(), "b < a")

	// A long chain closed at its ends.
	chain := make([]Priority, 200)
	for i := range chain {
		chain[i] = o.New(fmt.Sprint("c", i))
		if i > 0 {
			require.NoError(t, o.Less(chain[i-1], chain[i]))
		}
	}
	assert.ErrorIs(t, o.Less(chain[len(chain)-1], chain[0]), ErrCycle)
	assert.ErrorIs(t, o.Less(chain[150], chain[3]), ErrCycle)
	assert.True(t, o.LessEq(chain[0], chain[len(chain)-1]))
}

func TestForeignAndFrozen(t *testing.T) {
	o1, o2 := NewOrder(), NewOrder()
	a, x := o1.New("a"), o2.New("x")
	assert.ErrorIs(t, o1.Less(a, x), ErrForeignPriority)
	assert.ErrorIs(t, o1.Less(x, a), ErrForeignPriority)
	assert.ErrorIs(t, o1.Less(Priority{}, a), ErrForeignPriority)
	assert.False(t, o1.LessEq(a, x))
	assert.False(t, o1.LessEq(o2.Bottom(), a))
	assert.False(t, o1.LessEq(Priority{}, Priority{}))
	assert.True(t, o1.Contains(a))
	assert.False(t, o1.Contains(x))
	assert.True(t, Priority{}.IsZero())
	assert.False(t, a.IsZero())
	assert.Same(t, o1, a.Order())
	_, ok := o1.Rank(x)
	assert.False(t, ok)

	o1.Freeze()
	b := o1.New("b")
	assert.ErrorIs(t, o1.Less(a, b), ErrFrozen)
	_, ok = o1.Rank(b)
	assert.False(t, ok, "created after Freeze: no rank")
	assert.True(t, o1.LessEq(o1.Bottom(), b))
	assert.True(t, o1.LessEq(b, o1.Top()))
	assert.True(t, o1.LessEq(b, b))
	assert.False(t, o1.LessEq(a, b))
	assert.False(t, o1.LessEq(b, a))
}

func TestNamesAndLen(t *testing.T) {
	o := NewOrder()
	ui := o.New("ui")
	assert.Equal(t, "top", o.Top().String())
	assert.Equal(t, "bottom", o.Bottom().String())
	assert.Equal(t, "ui", ui.String())
	assert.Equal(t, 3, o.Len())
	assert.Equal(t, []Priority{o.Bottom(), o.Top(), ui}, o.Priorities())
	assert.NotEmpty(t, Priority{}.String())
}

// TestTopologicalRandom checks on random DAGs that the frozen order extends every
// declaration and that LessEq agrees before and after freezing.
func TestTopologicalRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		o := NewOrder()
		n := 2 + rng.IntN(25)
		ps := make([]Priority, n)
		for i := range ps {
			ps[i] = o.New(fmt.Sprint(i))
		}
		type edge struct{ a, b Priority }
		var edges []edge
		for range 3 * n {
			a, b := ps[rng.IntN(n)], ps[rng.IntN(n)]
			err := o.Less(a, b)
			if err == nil {
				edges = append(edges, edge{a, b})
				continue
			}
			require.ErrorIs(t, err, ErrCycle)
			require.True(t, o.LessEq(b, a), "a cycle error means b ⪯ a")
		}
		all := o.Priorities()
		before := make([]bool, 0, len(all)*len(all))
		for _, a := range all {
			for _, b := range all {
				before = append(before, o.LessEq(a, b))
			}
		}
		order := o.Freeze()
		require.Len(t, order, n+2)
		require.Equal(t, order, o.Freeze(), "idempotent")
		assert.Equal(t, o.Bottom(), order[0])
		assert.Equal(t, o.Top(), order[len(order)-1])
		for _, e := range edges {
			ra, _ := o.Rank(e.a)
			rb, _ := o.Rank(e.b)
			assert.Less(t, ra, rb)
		}
		i := 0
		for _, a := range all {
			for _, b := range all {
				require.Equal(t, before[i], o.LessEq(a, b), "%v ⪯ %v", a, b)
				i++
			}
		}
	}
}

func TestRankTieBreak(t *testing.T) {
	o := NewOrder()
	c, b, a := o.New("c"), o.New("b"), o.New("a")
	require.NoError(t, o.Less(a, b))
	// c has no constraint and was created first, so it comes first.
	assert.Equal(t, []Priority{o.Bottom(), c, a, b, o.Top()}, o.Freeze())
	r, ok := o.Rank(b)
	assert.True(t, ok)
	assert.Equal(t, 3, r)
}

func TestConcurrentNew(t *testing.T) {
	o := NewOrder()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			prev := o.Bottom()
			for i := range 100 {
				p := o.New(fmt.Sprint(g, "-", i))
				if i > 0 {
					assert.NoError(t, o.Less(prev, p))
				}
				assert.True(t, o.LessEq(prev, p))
				prev = p
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 802, o.Len())
	var wg2 sync.WaitGroup
	for range 4 {
		wg2.Go(func() {
			r, ok := o.Rank(o.Top())
			assert.True(t, ok)
			assert.Equal(t, 801, r)
		})
	}
	wg2.Wait()
}

func TestRankRace(t *testing.T) {
	o := NewOrder()
	p := o.New("p")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			r, ok := o.Rank(p)
			assert.True(t, ok)
			assert.Equal(t, 1, r)
		})
	}
	wg.Wait()
	assert.True(t, errors.Is(o.Less(p, o.Top()), ErrFrozen))
}

func ExampleOrder() {
	o := NewOrder()
	ui, plan, batch := o.New("ui"), o.New("plan"), o.New("batch")
	_ = o.Less(batch, plan)
	_ = o.Less(plan, ui)
	fmt.Println(o.LessEq(batch, ui), o.LessEq(ui, batch))
	fmt.Println(o.Less(ui, batch) != nil)
	fmt.Println(o.Freeze())
	// Output:
	// true false
	// true
	// [bottom batch plan ui top]
}

// The zero Order is an empty order ready to use, like NewOrder's.
func TestZeroOrder(t *testing.T) {
	var o Order
	p := o.New("ui")
	if err := o.Less(o.Bottom(), p); err != nil {
		t.Fatal(err)
	}
	if !o.LessEq(p, o.Top()) || o.Len() != 3 || o.Top().String() != "top" {
		t.Fatalf("zero order: LessEq %v, Len %d, Top %q", o.LessEq(p, o.Top()), o.Len(), o.Top().String())
	}
	if r, ok := o.Rank(p); !ok || r != 1 {
		t.Fatalf("Rank(ui) = %d, %v", r, ok)
	}
	c, err := Uniform(&o), error(nil)
	if c == nil || err != nil {
		t.Fatal("no criterion over the zero order")
	}
}
