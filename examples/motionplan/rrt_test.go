package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRRTFindsFreePath(t *testing.T) {
	g := Generate(rand.New(rand.NewPCG(5, 5)), 32, 32, 12, 0.05)
	start, goal := Vec{1, 1}, Vec{float64(g.W - 2), float64(g.H - 2)}
	cfg := RRTConfig{Step: 2, MaxNodes: 20000, GoalBias: 0.1}
	path, ok := RRT(g, start, goal, rand.New(rand.NewPCG(1, 1)), cfg, nil)
	require.True(t, ok)
	assert.Equal(t, start, path[0])
	assert.Equal(t, goal, path[len(path)-1])
	for i := 1; i < len(path); i++ {
		assert.True(t, segmentFree(g, path[i-1].X, path[i-1].Y, path[i].X, path[i].Y), "segment %d blocked", i)
	}
	assert.GreaterOrEqual(t, pathLength(path), start.dist(goal))
}

func TestRRTStraightLine(t *testing.T) {
	g := NewGrid(20, 20)
	path, ok := RRT(g, Vec{2, 2}, Vec{15, 9}, rand.New(rand.NewPCG(1, 2)), RRTConfig{Step: 3, MaxNodes: 500, GoalBias: 0.2, Window: 2}, nil)
	require.True(t, ok)
	assert.Equal(t, []Vec{{2, 2}, {15, 9}}, path, "shortcutting leaves the straight segment on an empty grid")
}

func TestRRTGivesUp(t *testing.T) {
	g := NewGrid(10, 10)
	for y := 0; y < 10; y++ {
		g.Set(Point{5, y}, true)
	}
	_, ok := RRT(g, Vec{1, 1}, Vec{8, 8}, rand.New(rand.NewPCG(1, 2)), RRTConfig{Step: 1, MaxNodes: 300, GoalBias: 0.1}, nil)
	assert.False(t, ok)
}
