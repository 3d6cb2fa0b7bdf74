// Command motionplan is a robot motion planner on fairly, after §6.3.1 of
// "Fairness in Responsive Parallelism". Three activities share the machine
// at three priorities:
//
//   - the interaction loop (high): senses obstacles without pause (a
//     perception pipeline that takes every frame, so it always has work)
//     and, at a fixed tick, moves the robot along the best current path,
//     recording stalls (ticks with no usable path), replans and time to goal;
//   - the short-term planner (medium): rounds of several RRT instances at
//     once, from the robot to the next landmark, keeping the shortest path;
//   - the long-term planner (low): parallel A* over the whole map, giving a
//     coarse route of landmarks; it refreshes the route every few
//     milliseconds and replans at once when sensing finds an obstacle on
//     the route or the short-term planner cannot reach its landmark.
//
// The map the planners get shows some doors open that are closed in the
// world, so the robot must sense and replan. The fairness criterion, set by
// -criterion as weights for loop,short,long, decides how the planners keep
// up. The default, 1,4,1, gives shares 1/6, 2/3 and 1/6: stretch 1.5 for
// the short-term planner and 6 for the long-term one, the stretches the
// paper names, with the short-term planner getting four times the
// long-term planner's share. (The paper also says the loop gets as much as
// the short-term planner; with shares 4:4:1 the stretches would be 2.25 and
// 9 instead, so we keep the stretches and give the loop the long-term
// planner's share. The loop is the top priority, so it borrows time for
// urgent work anyway.)
//
// -table runs four criteria: the default; equal planner shares; a starved
// long-term planner; everything to the loop.
//
// Usage:
//
//	go run ./examples/motionplan                 # one run, default criterion
//	go run ./examples/motionplan -table          # the four criteria, a markdown table
//	go run ./examples/motionplan -png run.png    # also draw the map and the path travelled
//	go run ./examples/motionplan -gen 64x64 > my.map
package main

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
)

//go:embed maps/*.map
var mapFiles embed.FS

// Scenario is a named fairness criterion for the planner, as weights.
type Scenario struct {
	Name              string
	Loop, Short, Long float64
}

// Scenarios are the criteria the table compares, after the paper's findings.
var Scenarios = []Scenario{
	{"default (1.5× short, 6× long)", 1, 4, 1},
	{"equal planner shares", 1, 2.5, 2.5},
	{"long-term planner starved", 1, 4.9, 0.1},
	{"everything to the loop", 1, 0, 0},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags, and what they name: the map, the
// criteria, the size of a map to generate.
type options struct {
	mapName   string
	criterion string
	table     bool
	pngPath   string
	gen       string
	room      int
	clutter   float64
	procs     int
	seed      uint64
	hidden    int
	limit     time.Duration
	speed     float64

	grid       *Grid
	scenarios  []Scenario
	genW, genH int
}

// Bounds of the flags.
const (
	maxProcs  = 256
	maxSide   = 4096 // of a generated map
	maxHidden = 64
	maxSpeed  = 10_000
)

// run is the command without the process around it. It returns the exit
// code: 0 (also for -h), 2 after a mistake on the command line, 1 when the
// run fails; the error goes to stderr on a line that starts "motionplan: ".
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "motionplan: %v\nRun 'motionplan -h' for the flags.\n", err)
		return 2
	}
	if err := execute(o, stdout); err != nil {
		fmt.Fprintf(stderr, "motionplan: %v\n", err)
		return 1
	}
	return 0
}

// parseFlags reads and checks the command line, and loads the map.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("motionplan", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints a mistake, once; -h prints the usage below
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: motionplan [flags]\n\n"+
			"Runs the robot motion planner on fairly: an interaction loop, a short-term and a long-term\n"+
			"planner at three priorities, under one criterion or (-table) the four of the comparison.\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.mapName, "map", "rooms-128", "map: a name from maps/ (rooms-128, rooms-64, rooms-48x32, open-32) or a .map file")
	fs.StringVar(&o.criterion, "criterion", "1,4,1", "weights of loop,short-term,long-term")
	fs.BoolVar(&o.table, "table", false, "run the four criteria of the comparison and print a markdown table")
	fs.StringVar(&o.pngPath, "png", "", "write a picture of the map and the path travelled to this file (with -table, one per criterion: name-1.png, ...)")
	fs.StringVar(&o.gen, "gen", "", "write a generated WxH map in .map format to stdout and exit")
	fs.IntVar(&o.room, "room", 16, "room size of -gen maps, 4 to the map's side")
	fs.Float64Var(&o.clutter, "clutter", 0.08, "share of cells -gen fills with furniture, 0 to 0.5")
	fs.IntVar(&o.procs, "procs", 0, fmt.Sprintf("workers, 0 to %d (0 = GOMAXPROCS)", maxProcs))
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the world and the planners")
	fs.IntVar(&o.hidden, "hidden", 4, fmt.Sprintf("doors on the route that the map shows open but are closed, 0 to %d", maxHidden))
	fs.DurationVar(&o.limit, "limit", 8*time.Second, "give up a run after this long, 1ms to 1h")
	fs.Float64Var(&o.speed, "speed", 60, fmt.Sprintf("robot speed, cells per second, 0.1 to %d", maxSpeed))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := errors.Join(
		between("procs", o.procs, 0, maxProcs),
		between("hidden", o.hidden, 0, maxHidden),
		between("limit", o.limit, time.Millisecond, time.Hour),
		between("speed", o.speed, 0.1, maxSpeed),
		between("clutter", o.clutter, 0, 0.5),
	); err != nil {
		return o, err
	}
	var err error
	if o.gen != "" {
		if _, err := fmt.Sscanf(o.gen, "%dx%d", &o.genW, &o.genH); err != nil || min(o.genW, o.genH) < 4 || max(o.genW, o.genH) > maxSide {
			return o, fmt.Errorf("-gen %q is not WxH with sides 4 to %d", o.gen, maxSide)
		}
		return o, between("room", o.room, 4, max(4, o.genW, o.genH))
	}
	if o.grid, err = loadMap(o.mapName); err != nil {
		return o, err
	}
	o.scenarios = Scenarios
	if !o.table {
		s, err := parseCriterion(o.criterion)
		if err != nil {
			return o, err
		}
		o.scenarios = []Scenario{s}
	}
	return o, nil
}

// execute generates a map, or runs the robot under each scenario of o.
func execute(o options, out io.Writer) error {
	if o.gen != "" {
		return WriteMap(out, Generate(rand.New(rand.NewPCG(o.seed, 1)), o.genW, o.genH, o.room, o.clutter))
	}
	g := o.grid
	cfg := DefaultSimConfig(g, o.hidden, o.seed)
	cfg.Limit, cfg.Speed = o.limit, o.speed
	var rows []Row
	for i, s := range o.scenarios {
		row, err := RunScenario(s, cfg, o.procs)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		rows = append(rows, row)
		if o.pngPath != "" {
			path := o.pngPath
			if o.table { // one picture per criterion: run.png becomes run-1.png, run-2.png, ...
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), i+1, ext)
			}
			var buf bytes.Buffer
			if err := WritePNG(&buf, cfg.Known, cfg.Truth, row.Result, cfg.Start, cfg.Goal, 6); err != nil {
				return err
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "map %s (%dx%d), %d closed doors, robot %.0f cells/s, limit %v\n\n", o.mapName, g.W, g.H, o.hidden, cfg.Speed, cfg.Limit)
	WriteTable(out, rows)
	return nil
}

// DefaultSimConfig sets up a run on g from its top-left to its bottom-right
// corner, with hidden obstacles across the route.
func DefaultSimConfig(g *Grid, hidden int, seed uint64) SimConfig {
	start, goal := Point{1, 1}, Point{g.W - 2, g.H - 2}
	return SimConfig{
		Known: g, Truth: HideObstacles(g, start, goal, hidden),
		Start: start, Goal: goal,
		Speed: 60, Tick: 10 * time.Millisecond, Limit: 8 * time.Second,
		Refresh: 20 * time.Millisecond, Drift: 0.15, SenseRadius: 8, Rays: 2048, Landmark: 12, Reach: 4,
		RRTs: 8, RRT: RRTConfig{Step: 2, MaxNodes: 900, GoalBias: 0.05, Window: 4, Refine: true},
		Seed: seed,
	}
}

// ErrUnknownMap is returned for a -map that is neither a stored map nor a file.
var ErrUnknownMap = errors.New("unknown map")

func loadMap(name string) (*Grid, error) {
	data, err := mapFiles.ReadFile("maps/" + name + ".map")
	if err != nil {
		if data, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("-map: %w %q: neither a map of maps/ (rooms-128, rooms-64, rooms-48x32, open-32) nor a file that opens: %w",
				ErrUnknownMap, name, err)
		}
	}
	g, err := ReadMap(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("-map %s: %w", name, err)
	}
	return g, nil
}

// parseCriterion reads -criterion: three weights loop,short,long, none
// negative and not all zero.
func parseCriterion(s string) (Scenario, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Scenario{}, fmt.Errorf("-criterion %q is not three weights loop,short,long", s)
	}
	var w [3]float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v >= 0 && v <= 1e6) {
			return Scenario{}, fmt.Errorf("-criterion %q: %q is not a weight from 0 to 1e6", s, p)
		}
		w[i] = v
	}
	if w[0]+w[1]+w[2] == 0 {
		return Scenario{}, fmt.Errorf("-criterion %q gives no priority a share", s)
	}
	return Scenario{Name: s, Loop: w[0], Short: w[1], Long: w[2]}, nil
}

// Row is one run of the table.
type Row struct {
	Scenario
	Shares [3]float64 // criterion shares of loop, short, long
	CPU    [3]float64 // measured processor shares of loop, short, long
	Result
}

// RunScenario runs the robot once on a new runtime with the scenario's
// criterion.
func RunScenario(s Scenario, cfg SimConfig, procs int) (Row, error) {
	o := fairness.NewOrder()
	pr, err := NewPriorities(o)
	if err != nil {
		return Row{}, err
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{pr.Loop: s.Loop, pr.Short: s.Short, pr.Long: s.Long})
	if err != nil {
		return Row{}, err
	}
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: crit, Seed: cfg.Seed})
	if err != nil {
		return Row{}, err
	}
	res, err := Simulate(rt, pr, cfg)
	stats := rt.Stats()
	if errC := rt.Close(); err == nil {
		err = errC
	}
	row := Row{Scenario: s, Result: res}
	for i, p := range []fairness.Priority{pr.Loop, pr.Short, pr.Long} {
		row.Shares[i] = crit.Share(p)
		for _, ps := range stats.Priorities {
			if ps.Priority == p {
				row.CPU[i] = ps.CPUShare
			}
		}
	}
	return row, err
}

// WriteTable prints rows as a markdown table.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| criterion | shares loop/short/long | reached | time | stalled ticks | replans asked/made | plans long/short | CPU loop/short/long |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		reached := "no"
		if r.Reached {
			reached = "yes"
		}
		stalled := 0.0
		if r.Ticks > 0 {
			stalled = 100 * float64(r.Stalls) / float64(r.Ticks)
		}
		fmt.Fprintf(w, "| %s | %.0f/%.0f/%.0f %% | %s | %.1f s | %d of %d (%.0f %%) | %d/%d | %d/%d | %.0f/%.0f/%.0f %% |\n",
			r.Name, 100*r.Shares[0], 100*r.Shares[1], 100*r.Shares[2], reached, r.Elapsed.Seconds(),
			r.Stalls, r.Ticks, stalled, r.Replans, r.LongPlans, r.LongRuns, r.ShortPlans, 100*r.CPU[0], 100*r.CPU[1], 100*r.CPU[2])
	}
}

// between checks that the value v of the flag name is in [lo, hi].
func between[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("-%s %v is not between %v and %v", name, v, lo, hi)
}
