package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ErrMapFormat is returned by ReadMap for text that is not a .map file.
var ErrMapFormat = errors.New("motionplan: bad .map file")

// Point is a grid cell, X the column and Y the row.
type Point struct{ X, Y int }

// Grid is a 2D occupancy map: a cell is free or blocked. Its text form is the
// .map format of the grid-pathfinding benchmarks (a type/height/width/map
// header, then one line per row with '.' for free and '@' or 'T' for blocked).
type Grid struct {
	W, H    int
	blocked []bool
}

// NewGrid gives a w×h grid with every cell free.
func NewGrid(w, h int) *Grid { return &Grid{W: w, H: h, blocked: make([]bool, w*h)} }

// In reports whether p lies on the grid.
func (g *Grid) In(p Point) bool { return p.X >= 0 && p.Y >= 0 && p.X < g.W && p.Y < g.H }

// Blocked reports whether p is off the grid or an obstacle.
func (g *Grid) Blocked(p Point) bool { return !g.In(p) || g.blocked[p.Y*g.W+p.X] }

// Set marks p blocked or free.
func (g *Grid) Set(p Point, blocked bool) { g.blocked[p.Y*g.W+p.X] = blocked }

// Clone gives an independent copy of g.
func (g *Grid) Clone() *Grid {
	c := *g
	c.blocked = append([]bool(nil), g.blocked...)
	return &c
}

func (g *Grid) index(p Point) int32 { return int32(p.Y*g.W + p.X) }

func (g *Grid) point(i int32) Point { return Point{int(i) % g.W, int(i) / g.W} }

// ReadMap parses a grid in .map format. Besides '.', the passable terrain
// letters 'G' and 'S' of the format count as free; every other letter
// ('@', 'O', 'T', 'W') is blocked.
func ReadMap(r io.Reader) (*Grid, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	header := map[string]string{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "map" {
			break
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%w: header line %q", ErrMapFormat, line)
		}
		header[k] = strings.TrimSpace(v)
	}
	h, errH := strconv.Atoi(header["height"])
	w, errW := strconv.Atoi(header["width"])
	if errH != nil || errW != nil || w <= 0 || h <= 0 {
		return nil, fmt.Errorf("%w: missing or bad height/width", ErrMapFormat)
	}
	g := NewGrid(w, h)
	for y := 0; y < h; y++ {
		if !sc.Scan() {
			return nil, fmt.Errorf("%w: %d rows, want %d", ErrMapFormat, y, h)
		}
		row := strings.TrimRight(sc.Text(), "\r")
		if len(row) != w {
			return nil, fmt.Errorf("%w: row %d has %d cells, want %d", ErrMapFormat, y, len(row), w)
		}
		for x := 0; x < w; x++ {
			switch row[x] {
			case '.', 'G', 'S':
			default:
				g.Set(Point{x, y}, true)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

// WriteMap writes g in .map format; blocked cells are written as '@'.
func WriteMap(w io.Writer, g *Grid) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "type octile\nheight %d\nwidth %d\nmap\n", g.H, g.W)
	row := make([]byte, g.W+1)
	row[g.W] = '\n'
	for y := 0; y < g.H; y++ {
		for x := 0; x < g.W; x++ {
			row[x] = '.'
			if g.Blocked(Point{x, y}) {
				row[x] = '@'
			}
		}
		bw.Write(row)
	}
	return bw.Flush()
}

// Generate makes a w×h indoor map: a border wall, a lattice of rooms of
// about room×room cells whose walls have doorways, and scattered furniture
// (single blocked cells with probability clutter). The corners (1,1) and
// (w-2,h-2) are kept free and connected, so they serve as start and goal.
func Generate(rng *rand.Rand, w, h, room int, clutter float64) *Grid {
	g := NewGrid(w, h)
	for x := 0; x < w; x++ {
		g.Set(Point{x, 0}, true)
		g.Set(Point{x, h - 1}, true)
	}
	for y := 0; y < h; y++ {
		g.Set(Point{0, y}, true)
		g.Set(Point{w - 1, y}, true)
	}
	// Interior walls on a jittered lattice, each cut by a door per room side.
	for x := room; x < w-2; x += room {
		wallX := x + rng.IntN(3) - 1
		for y := 1; y < h-1; y++ {
			g.Set(Point{wallX, y}, true)
		}
		for y0 := 1; y0 < h-1; y0 += room {
			door := y0 + rng.IntN(max(1, min(room, h-1-y0)-2))
			for d := 0; d < 2 && door+d < h-1; d++ {
				g.Set(Point{wallX, door + d}, false)
			}
		}
	}
	for y := room; y < h-2; y += room {
		wallY := y + rng.IntN(3) - 1
		for x := 1; x < w-1; x++ {
			if g.Blocked(Point{x, wallY - 1}) && g.Blocked(Point{x, wallY + 1}) {
				continue // keep vertical walls' doors crossable
			}
			g.Set(Point{x, wallY}, true)
		}
		for x0 := 1; x0 < w-1; x0 += room {
			door := x0 + rng.IntN(max(1, min(room, w-1-x0)-2))
			for d := 0; d < 2 && door+d < w-1; d++ {
				g.Set(Point{door + d, wallY}, false)
			}
		}
	}
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			if rng.Float64() < clutter {
				g.Set(Point{x, y}, true)
			}
		}
	}
	start, goal := Point{1, 1}, Point{w - 2, h - 2}
	g.Set(start, false)
	g.Set(goal, false)
	// Clutter can seal a door; open a straight corridor only if needed.
	if _, ok := AStar(g, start, goal); !ok {
		for x := 1; x < w-1; x++ {
			g.Set(Point{x, 1}, false)
		}
		for y := 1; y < h-1; y++ {
			g.Set(Point{w - 2, y}, false)
		}
	}
	return g
}

// segmentFree reports whether the straight segment from a to b (in cell
// coordinates, cell centres at integers) crosses only free cells. It samples
// the segment at a quarter-cell step, fine enough for the robot's geometry.
func segmentFree(g *Grid, ax, ay, bx, by float64) bool {
	steps := int(math.Ceil(math.Hypot(bx-ax, by-ay)*4)) + 1
	for i := 0; i <= steps; i++ {
		t := float64(i) / float64(steps)
		if g.Blocked(cellOf(ax+t*(bx-ax), ay+t*(by-ay))) {
			return false
		}
	}
	return true
}

// cellOf is the cell containing the continuous position (x, y).
func cellOf(x, y float64) Point { return Point{int(math.Round(x)), int(math.Round(y))} }
