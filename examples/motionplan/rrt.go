package main

import (
	"math"
	"math/rand/v2"
)

// Vec is a continuous position on a grid; cell centres sit at integers.
type Vec struct{ X, Y float64 }

func (v Vec) dist(w Vec) float64 { return math.Hypot(w.X-v.X, w.Y-v.Y) }

func (v Vec) cell() Point { return cellOf(v.X, v.Y) }

func centre(p Point) Vec { return Vec{float64(p.X), float64(p.Y)} }

// RRTConfig bounds one Rapidly-exploring Random Tree search.
type RRTConfig struct {
	Step     float64 // longest edge of the tree, in cells
	MaxNodes int     // give up after growing this many nodes
	GoalBias float64 // probability of sampling the goal itself
	// Window confines sampling to the bounding box of start and goal
	// grown by this many cells; 0 samples the whole grid.
	Window float64
	// Refine keeps growing the tree to MaxNodes after it first reaches the
	// goal, keeping the cheapest way in (an anytime planner).
	Refine bool
}

// RRT grows a random tree from start until an edge reaches goal (with
// Refine, until it has MaxNodes nodes) and returns the cheapest tree path to
// goal, shortened by cutting corners where the straight line is free. yield,
// if not nil, is called every 64 samples. It returns false when the tree
// did not reach the goal within MaxNodes nodes (or 20×MaxNodes samples).
func RRT(g *Grid, start, goal Vec, rng *rand.Rand, cfg RRTConfig, yield func()) ([]Vec, bool) {
	if g.Blocked(start.cell()) || g.Blocked(goal.cell()) {
		return nil, false
	}
	lo, hi := Vec{0, 0}, Vec{float64(g.W - 1), float64(g.H - 1)}
	if cfg.Window > 0 {
		lo = Vec{math.Max(lo.X, math.Min(start.X, goal.X)-cfg.Window), math.Max(lo.Y, math.Min(start.Y, goal.Y)-cfg.Window)}
		hi = Vec{math.Min(hi.X, math.Max(start.X, goal.X)+cfg.Window), math.Min(hi.Y, math.Max(start.Y, goal.Y)+cfg.Window)}
	}
	nodes, parent, cost := []Vec{start}, []int{-1}, []float64{0}
	best, bestCost := -1, math.Inf(1) // node that reaches goal most cheaply
	for n := 0; len(nodes) < cfg.MaxNodes && n < 20*cfg.MaxNodes; n++ {
		if yield != nil && n%64 == 63 {
			yield()
		}
		target := goal
		if rng.Float64() >= cfg.GoalBias {
			target = Vec{lo.X + rng.Float64()*(hi.X-lo.X), lo.Y + rng.Float64()*(hi.Y-lo.Y)}
		}
		near, nd := 0, math.Inf(1)
		for i, v := range nodes {
			if d := v.dist(target); d < nd {
				near, nd = i, d
			}
		}
		from := nodes[near]
		to := target
		if nd > cfg.Step {
			to = Vec{from.X + (target.X-from.X)*cfg.Step/nd, from.Y + (target.Y-from.Y)*cfg.Step/nd}
		}
		if !segmentFree(g, from.X, from.Y, to.X, to.Y) {
			continue
		}
		nodes, parent, cost = append(nodes, to), append(parent, near), append(cost, cost[near]+from.dist(to))
		i := len(nodes) - 1
		if d := to.dist(goal); d <= cfg.Step && cost[i]+d < bestCost && segmentFree(g, to.X, to.Y, goal.X, goal.Y) {
			best, bestCost = i, cost[i]+d
			if !cfg.Refine {
				break
			}
		}
	}
	if best < 0 {
		return nil, false
	}
	path := []Vec{goal}
	for i := best; i >= 0; i = parent[i] {
		path = append(path, nodes[i])
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return shortcut(g, path), true
}

// shortcut drops the waypoints a straight free segment can skip.
func shortcut(g *Grid, path []Vec) []Vec {
	out := []Vec{path[0]}
	for i := 0; i < len(path)-1; {
		j := len(path) - 1
		for j > i+1 && !segmentFree(g, path[i].X, path[i].Y, path[j].X, path[j].Y) {
			j--
		}
		out = append(out, path[j])
		i = j
	}
	return out
}

// pathLength is the length of the polyline through path.
func pathLength(path []Vec) float64 {
	var l float64
	for i := 1; i < len(path); i++ {
		l += path[i-1].dist(path[i])
	}
	return l
}
