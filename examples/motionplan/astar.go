package main

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/thread"
)

// node is an entry of an A* open list.
type node struct {
	cell int32
	g, f float64
}

// openList is a binary heap of nodes by f.
type openList []node

func (h openList) Len() int           { return len(h) }
func (h openList) Less(i, j int) bool { return h[i].f < h[j].f }
func (h openList) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *openList) Push(x any)        { *h = append(*h, x.(node)) }
func (h *openList) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}

// The eight moves of the octile grid and their costs.
var moves = [8]struct {
	dx, dy int
	cost   float64
}{{1, 0, 1}, {-1, 0, 1}, {0, 1, 1}, {0, -1, 1}, {1, 1, math.Sqrt2}, {1, -1, math.Sqrt2}, {-1, 1, math.Sqrt2}, {-1, -1, math.Sqrt2}}

// octile is the exact distance between two cells on an empty octile grid, an
// admissible and consistent heuristic.
func octile(a, b Point) float64 {
	dx, dy := math.Abs(float64(a.X-b.X)), math.Abs(float64(a.Y-b.Y))
	return math.Max(dx, dy) + (math.Sqrt2-1)*math.Min(dx, dy)
}

// search is one A* query whose open list may be split across threads. The
// best-cost and parent tables are shared, so a cell reached more cheaply by
// any thread is re-opened wherever that happened; each thread stops when its
// cheapest open node cannot beat the best path to the goal found so far,
// which keeps the result optimal.
type search struct {
	g          *Grid
	goal       Point
	mu         sync.Mutex
	cost       []float64
	parent     []int32
	best       atomic.Uint64 // math.Float64bits of the cheapest goal cost found
	threads    atomic.Int32  // threads working on the query, the first included
	maxThreads int32
	threshold  int // open-list length above which a thread splits
}

func newSearch(g *Grid, start, goal Point, maxThreads int32, threshold int) (*search, openList) {
	s := &search{g: g, goal: goal, cost: make([]float64, g.W*g.H), parent: make([]int32, g.W*g.H),
		maxThreads: maxThreads, threshold: threshold}
	for i := range s.cost {
		s.cost[i], s.parent[i] = math.Inf(1), -1
	}
	s.best.Store(math.Float64bits(math.Inf(1)))
	s.threads.Store(1)
	si := g.index(start)
	s.cost[si] = 0
	return s, openList{{cell: si, g: 0, f: octile(start, goal)}}
}

// expand runs A* on open until its cheapest node cannot improve on the best
// goal cost. When split is not nil and open grows past the threshold while
// fewer than maxThreads threads work, half of open goes to split. yield, if
// not nil, is called every few hundred expansions.
func (s *search) expand(open *openList, split func(openList), yield func()) {
	goal := s.g.index(s.goal)
	for n := 0; open.Len() > 0; n++ {
		if yield != nil && n%256 == 255 {
			yield()
		}
		cur := heap.Pop(open).(node)
		if cur.f >= math.Float64frombits(s.best.Load()) {
			return
		}
		s.mu.Lock()
		stale := cur.g > s.cost[cur.cell]
		s.mu.Unlock()
		if stale {
			continue
		}
		if cur.cell == goal {
			s.improve(cur.g)
			continue
		}
		p := s.g.point(cur.cell)
		s.mu.Lock()
		for _, m := range moves {
			q := Point{p.X + m.dx, p.Y + m.dy}
			// Diagonal moves may not cut a blocked corner.
			if s.g.Blocked(q) || s.g.Blocked(Point{p.X + m.dx, p.Y}) || s.g.Blocked(Point{p.X, p.Y + m.dy}) {
				continue
			}
			qi, ng := s.g.index(q), cur.g+m.cost
			if ng < s.cost[qi] {
				s.cost[qi], s.parent[qi] = ng, cur.cell
				heap.Push(open, node{cell: qi, g: ng, f: ng + octile(q, s.goal)})
			}
		}
		s.mu.Unlock()
		if split != nil && open.Len() > s.threshold && s.reserveThread() {
			split(s.halve(open))
		}
	}
}

// improve lowers the best goal cost to c if c is lower.
func (s *search) improve(c float64) {
	for {
		old := s.best.Load()
		if c >= math.Float64frombits(old) || s.best.CompareAndSwap(old, math.Float64bits(c)) {
			return
		}
	}
}

func (s *search) reserveThread() bool {
	for {
		n := s.threads.Load()
		if n >= s.maxThreads {
			return false
		}
		if s.threads.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// halve moves every other node of open, cheap and dear alike, to a new list.
func (s *search) halve(open *openList) openList {
	var kept, given openList
	for i, n := range *open {
		if i%2 == 0 {
			kept = append(kept, n)
		} else {
			given = append(given, n)
		}
	}
	heap.Init(&kept)
	heap.Init(&given)
	*open = kept
	return given
}

// path reads the path to the goal from the parent table.
func (s *search) path() ([]Point, float64, bool) {
	gi := s.g.index(s.goal)
	c := s.cost[gi]
	if math.IsInf(c, 1) {
		return nil, c, false
	}
	var rev []Point
	for i := gi; i >= 0; i = s.parent[i] {
		rev = append(rev, s.g.point(i))
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev, c, true
}

// AStar finds a cheapest octile path from start to goal on one goroutine.
func AStar(g *Grid, start, goal Point) ([]Point, bool) {
	if g.Blocked(start) || g.Blocked(goal) {
		return nil, false
	}
	s, open := newSearch(g, start, goal, 1, 0)
	s.expand(&open, nil, nil)
	p, _, ok := s.path()
	return p, ok
}

// ParallelAStar finds a cheapest octile path from start to goal inside the
// thread c. A thread whose open list grows past threshold nodes hands half
// of it to a new thread at c's priority, up to maxThreads threads in all.
func ParallelAStar(c *thread.Ctx, g *Grid, start, goal Point, maxThreads, threshold int) ([]Point, bool) {
	if g.Blocked(start) || g.Blocked(goal) {
		return nil, false
	}
	s, open := newSearch(g, start, goal, int32(max(1, maxThreads)), threshold)
	s.work(c, open)
	p, _, ok := s.path()
	return p, ok
}

// work expands open in thread c and waits for the threads it split off.
func (s *search) work(c *thread.Ctx, open openList) struct{} {
	var kids []*thread.Handle[struct{}]
	s.expand(&open, func(part openList) {
		kids = append(kids, thread.Fork(c, func(c *thread.Ctx) struct{} {
			defer s.threads.Add(-1)
			return s.work(c, part)
		}))
	}, func() { thread.Yield(c) })
	for _, k := range kids {
		// A child runs at c's own priority, so Join cannot report an
		// inversion, and the search code does not panic.
		_, _ = thread.Join(c, k)
	}
	return struct{}{}
}

// Landmarks thins a cell path to every spacing-th cell, keeping the last.
func Landmarks(path []Point, spacing int) []Point {
	var out []Point
	for i := spacing; i < len(path); i += spacing {
		out = append(out, path[i])
	}
	if len(path) > 0 && (len(out) == 0 || out[len(out)-1] != path[len(path)-1]) {
		out = append(out, path[len(path)-1])
	}
	return out
}
