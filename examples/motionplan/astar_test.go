package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dijkstra is a plain reference for the cheapest octile path cost, by
// repeated relaxation (slow, simple, obviously right).
func dijkstra(g *Grid, start, goal Point) float64 {
	dist := make([]float64, g.W*g.H)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	dist[g.index(start)] = 0
	for changed := true; changed; {
		changed = false
		for y := 0; y < g.H; y++ {
			for x := 0; x < g.W; x++ {
				p := Point{x, y}
				if g.Blocked(p) || math.IsInf(dist[g.index(p)], 1) {
					continue
				}
				for _, m := range moves {
					q := Point{x + m.dx, y + m.dy}
					if g.Blocked(q) || g.Blocked(Point{x + m.dx, y}) || g.Blocked(Point{x, y + m.dy}) {
						continue
					}
					if d := dist[g.index(p)] + m.cost; d < dist[g.index(q)]-1e-9 {
						dist[g.index(q)], changed = d, true
					}
				}
			}
		}
	}
	return dist[g.index(goal)]
}

// cost checks that path is a connected octile path and returns its cost.
func cost(t *testing.T, g *Grid, path []Point) float64 {
	t.Helper()
	var c float64
	for i, p := range path {
		require.False(t, g.Blocked(p), "path crosses %v", p)
		if i == 0 {
			continue
		}
		dx, dy := p.X-path[i-1].X, p.Y-path[i-1].Y
		require.True(t, max(dx, -dx) <= 1 && max(dy, -dy) <= 1 && (dx != 0 || dy != 0), "jump %v→%v", path[i-1], p)
		c += math.Hypot(float64(dx), float64(dy))
	}
	return c
}

func TestAStarOptimal(t *testing.T) {
	for seed := range uint64(10) {
		g := Generate(rand.New(rand.NewPCG(seed, 3)), 30, 24, 7, 0.2)
		start, goal := Point{1, 1}, Point{g.W - 2, g.H - 2}
		path, ok := AStar(g, start, goal)
		require.True(t, ok)
		assert.Equal(t, start, path[0])
		assert.Equal(t, goal, path[len(path)-1])
		assert.InDelta(t, dijkstra(g, start, goal), cost(t, g, path), 1e-9, "seed %d", seed)
	}
}

func TestAStarUnreachable(t *testing.T) {
	g := NewGrid(5, 5)
	for y := 0; y < 5; y++ {
		g.Set(Point{2, y}, true)
	}
	_, ok := AStar(g, Point{0, 0}, Point{4, 4})
	assert.False(t, ok)
	_, ok = AStar(g, Point{0, 0}, Point{2, 2})
	assert.False(t, ok, "blocked goal")
}

func TestLandmarks(t *testing.T) {
	path := []Point{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}}
	assert.Equal(t, []Point{{3, 0}, {6, 0}}, Landmarks(path, 3))
	assert.Equal(t, []Point{{4, 0}, {6, 0}}, Landmarks(path, 4))
	assert.Equal(t, []Point{{6, 0}}, Landmarks(path, 10))
	assert.Empty(t, Landmarks(nil, 3))
}
