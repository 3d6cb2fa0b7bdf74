package main

import (
	"bytes"
	"fmt"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func newRuntime(t *testing.T) (*runtime.Runtime, fairness.Priority) {
	t.Helper()
	o := fairness.NewOrder()
	p := o.New("plan")
	rt, err := runtime.New(runtime.Config{Procs: 2, Order: o})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt, p
}

func TestParallelAStarOptimal(t *testing.T) {
	rt, p := newRuntime(t)
	for seed := range uint64(6) {
		g := Generate(rand.New(rand.NewPCG(seed, 9)), 40, 40, 10, 0.15)
		start, goal := Point{1, 1}, Point{g.W - 2, g.H - 2}
		want, ok := AStar(g, start, goal)
		require.True(t, ok)
		// A low threshold makes the search split early and often.
		got, err := thread.Run(rt, p, func(c *thread.Ctx) []Point {
			path, _ := ParallelAStar(c, g, start, goal, 4, 8)
			return path
		})
		require.NoError(t, err)
		require.NotEmpty(t, got, "seed %d", seed)
		assert.Equal(t, start, got[0])
		assert.Equal(t, goal, got[len(got)-1])
		assert.InDelta(t, cost(t, g, want), cost(t, g, got), 1e-9, "seed %d", seed)
	}
}

func TestHideObstaclesClosesDoors(t *testing.T) {
	g, err := loadMap("rooms-64")
	require.NoError(t, err)
	start, goal := Point{1, 1}, Point{g.W - 2, g.H - 2}
	truth := HideObstacles(g, start, goal, 3)
	before, _ := AStar(g, start, goal)
	after, ok := AStar(truth, start, goal)
	require.True(t, ok, "the goal stays reachable")
	assert.Greater(t, cost(t, truth, after), cost(t, g, before), "closed doors lengthen the route")
	for y := 0; y < g.H; y++ {
		for x := 0; x < g.W; x++ {
			if g.Blocked(Point{x, y}) {
				require.True(t, truth.Blocked(Point{x, y}), "the world keeps the map's walls")
			}
		}
	}
}

// smallConfig is a run light enough for the race detector.
func smallConfig(t *testing.T) SimConfig {
	g, err := loadMap("rooms-48x32")
	require.NoError(t, err)
	cfg := DefaultSimConfig(g, 2, 3)
	cfg.Limit, cfg.Speed, cfg.Rays = 30*time.Second, 30, 128
	cfg.RRTs, cfg.RRT.MaxNodes = 2, 300
	return cfg
}

func TestSimulateReachesGoal(t *testing.T) {
	cfg := smallConfig(t)
	row, err := RunScenario(Scenarios[0], cfg, 2)
	require.NoError(t, err)
	res := row.Result
	require.True(t, res.Reached, "stalls %d of %d ticks", res.Stalls, res.Ticks)
	assert.Less(t, res.Trail[len(res.Trail)-1].dist(centre(cfg.Goal)), 0.75)
	assert.GreaterOrEqual(t, res.LongPlans, 1)
	assert.GreaterOrEqual(t, res.ShortPlans, 1)
	assert.Greater(t, res.Frames, 0)
	assert.Less(t, res.Stalls, res.Ticks)
	assert.GreaterOrEqual(t, res.Travelled, centre(cfg.Start).dist(centre(cfg.Goal))-1)
	for _, v := range res.Trail {
		require.False(t, cfg.Truth.Blocked(v.cell()), "the robot went through %v", v)
	}
	assert.InDelta(t, 2.0/3, row.Shares[1], 1e-9)
	assert.InDelta(t, 1.5, 1/row.Shares[1], 1e-9, "the default stretches the short-term planner by 1.5")
	assert.InDelta(t, 6, 1/row.Shares[2], 1e-9, "and the long-term planner by 6")

	var buf bytes.Buffer
	require.NoError(t, WritePNG(&buf, cfg.Known, cfg.Truth, res, cfg.Start, cfg.Goal, 3))
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, cfg.Known.W*3, img.Bounds().Dx())
	trail := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if img.At(x, y) == colTrail {
				trail++
			}
		}
	}
	// Trail points can share pixels when the robot slows down, so count
	// the distinct cells it crossed: each one shows some trail.
	cells := map[Point]bool{}
	for _, v := range res.Trail {
		cells[v.cell()] = true
	}
	assert.GreaterOrEqual(t, trail, len(cells), "the trail is drawn")
}

func TestTableCommand(t *testing.T) {
	var out strings.Builder
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"-table", "-map", "open-32", "-limit", "300ms", "-hidden", "1", "-png", filepath.Join(dir, "run.png")}, &out, &out), out.String())
	for i := range Scenarios {
		assert.FileExists(t, filepath.Join(dir, fmt.Sprintf("run-%d.png", i+1)))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2+2+len(Scenarios), out.String())
	for i, s := range Scenarios {
		assert.True(t, strings.HasPrefix(lines[4+i], "| "+s.Name+" |"), lines[4+i])
	}
}

// Every mistake on the command line exits 2 with one line that names the
// command once; -h exits 0.
func TestCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-map", "no-such-map"}, `-map: unknown map "no-such-map": neither a map of maps/`},
		{[]string{"-criterion", "1,2"}, `-criterion "1,2" is not three weights loop,short,long`},
		{[]string{"-criterion", "1,-2,1"}, `-criterion "1,-2,1": "-2" is not a weight`},
		{[]string{"-criterion", "0,0,0"}, `-criterion "0,0,0" gives no priority a share`},
		{[]string{"-gen", "2x2"}, `-gen "2x2" is not WxH with sides 4 to 4096`},
		{[]string{"-gen", "wide"}, `-gen "wide" is not WxH`},
		{[]string{"-gen", "20x10", "-room", "0"}, "-room 0 is not between 4 and 20"},
		{[]string{"-procs", "-1"}, "-procs -1 is not between 0 and 256"},
		{[]string{"-procs", "1000"}, "-procs 1000 is not between 0 and 256"},
		{[]string{"-hidden", "-1"}, "-hidden -1 is not between 0 and 64"},
		{[]string{"-limit", "0s"}, "-limit 0s is not between 1ms and 1h0m0s"},
		{[]string{"-speed", "-60"}, "-speed -60 is not between 0.1 and 10000"},
		{[]string{"-clutter", "2"}, "-clutter 2 is not between 0 and 0.5"},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		var out, errOut strings.Builder
		assert.Equal(t, 2, run(c.args, &out, &errOut), "%q", c.args)
		assert.True(t, strings.HasPrefix(errOut.String(), "motionplan: "+c.want), "%q: %q", c.args, errOut.String())
		assert.Equal(t, 1, strings.Count(errOut.String(), "motionplan:"), "%q: one prefix in %q", c.args, errOut.String())
		assert.Empty(t, out.String())
	}
	for _, h := range []string{"-h", "-help"} {
		var out, errOut strings.Builder
		assert.Equal(t, 0, run([]string{h}, &out, &errOut), h)
		assert.Contains(t, errOut.String(), "usage: motionplan [flags]")
	}
	var out, errOut strings.Builder
	require.Equal(t, 0, run([]string{"-gen", "20x10"}, &out, &errOut), errOut.String())
	g, err := ReadMap(strings.NewReader(out.String()))
	require.NoError(t, err)
	assert.Equal(t, 20, g.W)
}
