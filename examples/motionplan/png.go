package main

import (
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Colours of the picture.
var (
	colFree     = color.RGBA{250, 250, 250, 255}
	colWall     = color.RGBA{60, 60, 60, 255}
	colHidden   = color.RGBA{230, 120, 30, 255} // obstacles missing from the map
	colTrail    = color.RGBA{30, 90, 220, 255}
	colLandmark = color.RGBA{40, 170, 60, 255}
	colEnds     = color.RGBA{200, 30, 30, 255}
)

// WritePNG draws the world, scale pixels per cell: walls the map shows in
// grey, obstacles only the world has in orange, the last long-term plan's
// landmarks in green, the robot's trail in blue, start and goal in red.
func WritePNG(w io.Writer, known, truth *Grid, res Result, start, goal Point, scale int) error {
	img := image.NewRGBA(image.Rect(0, 0, truth.W*scale, truth.H*scale))
	fill := func(p Point, c color.Color, inset int) {
		for y := p.Y*scale + inset; y < (p.Y+1)*scale-inset; y++ {
			for x := p.X*scale + inset; x < (p.X+1)*scale-inset; x++ {
				img.Set(x, y, c)
			}
		}
	}
	for y := 0; y < truth.H; y++ {
		for x := 0; x < truth.W; x++ {
			p := Point{x, y}
			switch {
			case known.Blocked(p):
				fill(p, colWall, 0)
			case truth.Blocked(p):
				fill(p, colHidden, 0)
			default:
				fill(p, colFree, 0)
			}
		}
	}
	for _, p := range res.Landmarks {
		fill(p, colLandmark, scale/4)
	}
	// The trail: the centre of a cell maps to the centre of its square.
	px := func(v float64) float64 { return (v + 0.5) * float64(scale) }
	for i := 1; i < len(res.Trail); i++ {
		a, b := res.Trail[i-1], res.Trail[i]
		n := int(math.Ceil(a.dist(b)*float64(scale))) + 1
		for k := 0; k <= n; k++ {
			t := float64(k) / float64(n)
			img.Set(int(px(a.X+t*(b.X-a.X))), int(px(a.Y+t*(b.Y-a.Y))), colTrail)
		}
	}
	fill(start, colEnds, 0)
	fill(goal, colEnds, 0)
	return png.Encode(w, img)
}
