package main

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Priorities are the three priorities of the planner, loop > short > long.
type Priorities struct{ Loop, Short, Long fairness.Priority }

// NewPriorities declares the planner's three priorities in o.
func NewPriorities(o *fairness.Order) (Priorities, error) {
	pr := Priorities{Loop: o.New("loop"), Short: o.New("short-term"), Long: o.New("long-term")}
	if err := o.Less(pr.Long, pr.Short); err != nil {
		return pr, err
	}
	return pr, o.Less(pr.Short, pr.Loop)
}

// SimConfig describes one run of the robot.
type SimConfig struct {
	Known       *Grid // the map the planners are given
	Truth       *Grid // the world, with obstacles the map does not show
	Start, Goal Point
	Speed       float64       // cells per second along a usable path
	Tick        time.Duration // period of the robot's moves
	Limit       time.Duration // give up after this long
	Drift       float64       // standard deviation of the motion noise per tick, in cells
	SenseRadius float64       // how far the robot's rays see, in cells
	Rays        int           // rays per sensor frame
	Landmark    int           // spacing of the long-term plan's landmarks, in cells
	Reach       float64       // distance at which a landmark counts as reached
	RRTs        int           // RRT instances per short-term round
	Refresh     time.Duration // the long-term planner's period when nobody asks
	RRT         RRTConfig
	Seed        uint64
}

// Result is what the interaction loop recorded.
type Result struct {
	Reached    bool
	Elapsed    time.Duration // to the goal, or to the limit
	Ticks      int           // moves due
	Stalls     int           // ticks with no usable path
	LongPlans  int           // long-term plans published
	LongRuns   int           // long-term plans computed
	ShortPlans int           // short-term paths published
	Replans    int           // long-term plans asked for, the first included
	Frames     int           // sensor frames processed
	Travelled  float64       // cells
	Trail      []Vec         // robot positions, one per tick
	Landmarks  []Point       // the last long-term plan
}

// longPlan is a published long-term plan.
type longPlan struct {
	id        int
	cells     []Point
	landmarks []Point
}

// shortPlan is a published short-term path, made for long-term plan plan.
type shortPlan struct {
	plan int
	path []Vec
}

// shared is the state the three activities exchange. Maps are published
// copy-on-write so planners read a consistent snapshot without locks.
type shared struct {
	cfg     SimConfig
	known   atomic.Pointer[Grid]
	pos     atomic.Pointer[Vec]
	long    atomic.Pointer[longPlan]
	next    atomic.Int32 // index of the landmark being approached
	short   atomic.Pointer[shortPlan]
	replan  chan struct{} // the loop asks the long-term planner for a new plan
	planned chan struct{} // closed with the first long-term plan
	done    chan struct{}

	longPlans, longRuns, shortPlans, replans atomic.Int32
}

// Simulate runs the robot on rt: the interaction loop at pr.Loop, the
// short-term planner at pr.Short and the long-term planner at pr.Long. It
// returns when the robot reaches the goal or cfg.Limit passes.
func Simulate(rt *runtime.Runtime, pr Priorities, cfg SimConfig) (Result, error) {
	sh := &shared{cfg: cfg, replan: make(chan struct{}, 1), planned: make(chan struct{}), done: make(chan struct{})}
	sh.known.Store(cfg.Known.Clone())
	start := centre(cfg.Start)
	sh.pos.Store(&start)
	sh.askReplan()
	long := thread.Go(rt, pr.Long, sh.longTerm)
	short := thread.Go(rt, pr.Short, sh.shortTerm)
	res, err := thread.Run(rt, pr.Loop, sh.loop)
	close(sh.done)
	_, errL := long.Wait()
	_, errS := short.Wait()
	err = errors.Join(err, errL, errS)
	res.LongPlans, res.LongRuns = int(sh.longPlans.Load()), int(sh.longRuns.Load())
	res.ShortPlans, res.Replans = int(sh.shortPlans.Load()), int(sh.replans.Load())
	if p := sh.long.Load(); p != nil {
		res.Landmarks = p.landmarks
	}
	return res, err
}

func (sh *shared) stopped() bool {
	select {
	case <-sh.done:
		return true
	default:
		return false
	}
}

// longTerm plans the whole route with parallel A* from the robot's
// position, at once when the loop asks and otherwise every cfg.Refresh, as
// a planner that keeps its route up to date does. A new route replaces the
// current one when the loop asked for it, or when it no longer passes the
// landmark the robot heads for (the robot drifted, or the map changed).
func (sh *shared) longTerm(c *thread.Ctx) struct{} {
	workers := c.Runtime().Procs()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for id := 1; ; id++ {
		timer.Reset(sh.cfg.Refresh)
		wake := thread.Await(c, func() int {
			select {
			case <-sh.replan:
				return 1
			case <-timer.C:
				return 0
			case <-sh.done:
				return -1
			}
		})
		if wake < 0 {
			return struct{}{}
		}
		g, pos := sh.known.Load(), sh.pos.Load().cell()
		cells, ok := ParallelAStar(c, g, pos, sh.cfg.Goal, workers, 256)
		sh.longRuns.Add(1)
		if !ok {
			continue // the robot's cell is cut off for now: try again later
		}
		if cur := sh.long.Load(); cur != nil && wake == 0 && !diverges(cur, int(sh.next.Load()), cells, 2*sh.cfg.Landmark) {
			continue
		}
		sh.long.Store(&longPlan{id: id, cells: cells, landmarks: Landmarks(cells, sh.cfg.Landmark)})
		sh.next.Store(0)
		if sh.longPlans.Add(1) == 1 {
			close(sh.planned)
		}
	}
}

// diverges reports whether a new route, over its first stretch, keeps
// clear of the landmark the robot heads for in plan cur.
func diverges(cur *longPlan, next int, cells []Point, stretch int) bool {
	target := centre(cur.landmarks[min(next, len(cur.landmarks)-1)])
	for _, p := range cells[:min(stretch, len(cells))] {
		if centre(p).dist(target) <= 2.5 {
			return false
		}
	}
	return true
}

// shortTerm keeps planning from the robot to the next landmark with several
// RRT instances at once, publishing the shortest path of each round.
func (sh *shared) shortTerm(c *thread.Ctx) struct{} {
	// Nothing to plan towards before the first long-term plan.
	thread.Await(c, func() struct{} {
		select {
		case <-sh.planned:
		case <-sh.done:
		}
		return struct{}{}
	})
	fails := 0
	for round := uint64(0); !sh.stopped(); round++ {
		plan := sh.long.Load()
		target := min(int(sh.next.Load()), len(plan.landmarks)-1)
		g, from, to := sh.known.Load(), *sh.pos.Load(), centre(plan.landmarks[target])
		handles := make([]*thread.Handle[[]Vec], sh.cfg.RRTs)
		for i := range handles {
			rng := rand.New(rand.NewPCG(sh.cfg.Seed, round*1000+uint64(i)))
			handles[i] = thread.Fork(c, func(c *thread.Ctx) []Vec {
				p, _ := RRT(g, from, to, rng, sh.cfg.RRT, func() { thread.Yield(c) })
				return p
			})
		}
		var best []Vec
		for _, h := range handles {
			if p, err := thread.Join(c, h); err == nil && p != nil && (best == nil || pathLength(p) < pathLength(best)) {
				best = p
			}
		}
		if best == nil {
			// The landmark is out of reach: a sensed obstacle or drift has
			// made the long-term plan stale.
			if fails++; fails%3 == 0 {
				sh.askReplan()
			}
			continue
		}
		fails = 0
		sh.short.Store(&shortPlan{plan: plan.id, path: best})
		sh.shortPlans.Add(1)
	}
	return struct{}{}
}

// loop is the interaction loop. It senses without pause (a perception
// pipeline that processes every frame, so it always has work) and, each
// time a tick is due, moves the robot along the current short-term path.
func (sh *shared) loop(c *thread.Ctx) Result {
	cfg := sh.cfg
	r := robot{sh: sh, rng: rand.New(rand.NewPCG(cfg.Seed, 99)), known: sh.known.Load().Clone(), pos: *sh.pos.Load()}
	goal := centre(cfg.Goal)
	res := Result{Trail: []Vec{r.pos}}
	begin := time.Now()
	for {
		// Sense: cast rays in parallel, one thread per sector of the circle.
		found := sense(c, cfg.Truth, r.known, r.pos, cfg.SenseRadius, cfg.Rays)
		res.Frames++
		if len(found) > 0 {
			for _, p := range found {
				r.known.Set(p, true)
			}
			sh.known.Store(r.known.Clone())
			if plan := sh.long.Load(); plan != nil && crosses(plan.cells, found) {
				sh.askReplan()
			}
		}
		elapsed := time.Since(begin)
		for due := int(elapsed / cfg.Tick); res.Ticks < due; res.Ticks++ {
			if !r.move() {
				res.Stalls++
				continue
			}
			res.Trail = append(res.Trail, r.pos)
			if r.pos.dist(goal) < 0.75 {
				res.Reached, res.Elapsed = true, time.Since(begin)
				res.Travelled = pathLength(res.Trail)
				return res
			}
		}
		if elapsed >= cfg.Limit {
			res.Elapsed = elapsed
			res.Travelled = pathLength(res.Trail)
			return res
		}
	}
}

// askReplan asks the long-term planner for a plan unless a request waits.
func (sh *shared) askReplan() {
	select {
	case sh.replan <- struct{}{}:
		sh.replans.Add(1)
	default:
	}
}

// robot is the interaction loop's own state.
type robot struct {
	sh    *shared
	rng   *rand.Rand
	known *Grid // the loop's map; planners get copies
	pos   Vec
	path  *shortPlan // the path being followed
	way   int        // index of the waypoint the robot heads for
}

// move advances the robot by one tick along the newest short-term path of
// the current long-term plan and reports whether it had a usable one: a
// path whose rest is free in the known map and whose next waypoints the
// robot can see.
func (r *robot) move() bool {
	plan, sp := r.sh.long.Load(), r.sh.short.Load()
	if plan == nil || sp == nil || sp.plan != plan.id {
		return false
	}
	// Near a landmark, the short-term planner moves on to the next one
	// (planning ahead); it keeps planning to the last, the goal, until the end.
	if next := int(r.sh.next.Load()); next < len(plan.landmarks)-1 && r.pos.dist(centre(plan.landmarks[next])) < r.sh.cfg.Reach {
		r.sh.next.Store(int32(next + 1))
	}
	if sp != r.path {
		r.path, r.way = sp, 0
	}
	p := sp.path
	for i := r.way + 1; i < len(p); i++ {
		if !segmentFree(r.known, p[i-1].X, p[i-1].Y, p[i].X, p[i].Y) {
			return false // a sensed obstacle cuts the path: wait for a new one
		}
	}
	// Head for the farthest waypoint in sight, never back.
	way := -1
	for i := len(p) - 1; i >= r.way; i-- {
		if segmentFree(r.known, r.pos.X, r.pos.Y, p[i].X, p[i].Y) {
			way = i
			break
		}
	}
	if way < 0 {
		return false // drifted out of sight of the path
	}
	r.way = way
	w := p[way]
	d := r.pos.dist(w)
	if d < 1e-6 {
		return false // at the end of the path: waiting for the next one
	}
	step := r.sh.cfg.Speed * r.sh.cfg.Tick.Seconds()
	t := math.Min(1, step/d)
	nx, ny := r.pos.X+t*(w.X-r.pos.X), r.pos.Y+t*(w.Y-r.pos.Y)
	// Drift; a drift into an obstacle is a bump and is undone.
	if t < 1 {
		px, py := nx+r.rng.NormFloat64()*r.sh.cfg.Drift, ny+r.rng.NormFloat64()*r.sh.cfg.Drift
		if segmentFree(r.sh.cfg.Truth, r.pos.X, r.pos.Y, px, py) {
			nx, ny = px, py
		}
	}
	if !segmentFree(r.sh.cfg.Truth, r.pos.X, r.pos.Y, nx, ny) {
		return false // an obstacle the robot has not sensed yet
	}
	r.pos = Vec{nx, ny}
	r.sh.pos.Store(&Vec{nx, ny})
	return true
}

// crosses reports whether any of found lies on cells.
func crosses(cells, found []Point) bool {
	set := make(map[Point]bool, len(found))
	for _, p := range found {
		set[p] = true
	}
	for _, p := range cells {
		if set[p] {
			return true
		}
	}
	return false
}

// sense casts rays rays from pos over truth up to radius cells and returns
// the blocked cells they hit that known still shows free. The rays are split
// into sectors, each cast by its own thread.
func sense(c *thread.Ctx, truth, known *Grid, pos Vec, radius float64, rays int) []Point {
	const sectors = 4
	handles := make([]*thread.Handle[[]Point], sectors)
	for s := range handles {
		handles[s] = thread.Fork(c, func(*thread.Ctx) []Point {
			var hits []Point
			for r := s; r < rays; r += sectors {
				a := 2 * math.Pi * float64(r) / float64(rays)
				dx, dy := math.Cos(a)/4, math.Sin(a)/4
				for k := 1; float64(k) <= radius*4; k++ {
					p := cellOf(pos.X+float64(k)*dx, pos.Y+float64(k)*dy)
					if truth.Blocked(p) {
						if truth.In(p) && !known.Blocked(p) {
							hits = append(hits, p)
						}
						break
					}
				}
			}
			return hits
		})
	}
	var found []Point
	seen := map[Point]bool{}
	for _, h := range handles {
		hits, _ := thread.Join(c, h) // same priority, and casting rays does not panic
		for _, p := range hits {
			if !seen[p] {
				seen[p] = true
				found = append(found, p)
			}
		}
	}
	return found
}
