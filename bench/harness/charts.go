package harness

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The charts: every one has a title, axis labels with units, P on each
// series' legend entry, min–max bars where a setting was repeated, and the
// expected value or the goal as a line. Their legends sit to the right of
// the plot, off the data.

// drawFig8 draws measured over expected stretch per kernel: one point per
// criterion and processor count at the median of the repetitions, with a
// bar from the smallest to the largest, beside the expected value 1 and the
// goals.
func drawFig8(res *Results, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Figure 8: stretch of the low-priority kernel, measured / expected\n"+
		"point: median of %d runs, bar: their min–max", res.Reps)
	p.X.Label.Text = "kernel (at low priority, beside a time sink and a network echo)"
	p.Y.Label.Text = "measured / expected stretch (ratio)"
	p.Add(plotter.NewGrid())
	series := len(res.Criteria) * len(res.Procs)
	step := 0.7 / float64(max(1, series))
	top, i := 1.6, 0
	for _, c := range res.Criteria {
		for _, procs := range res.Procs {
			var pts spreadPoints
			for j, k := range res.Kernels {
				if s := stretchRatio(res, k, procs, c); s.N > 0 {
					pts.add(float64(j)+step*(float64(i)-float64(series-1)/2), s.Median, s.Min, s.Max)
					top = max(top, s.Max)
				}
			}
			if err := pts.draw(p, i, fmt.Sprintf("criterion %v, P=%d", c, procs)); err != nil {
				return err
			}
			i++
		}
	}
	x0, x1 := -0.5, float64(len(res.Kernels))-0.5
	for _, l := range []refLine{
		{y: 1, label: "expected: stretch = 1/F(low)", style: solid},
		{y: 1.15, label: "goal: median ≤ 1.15", style: dashed},
		{y: 1.5, label: "goal: every run ≤ 1.5", style: dotted},
	} {
		if err := l.draw(p, x0, x1); err != nil {
			return err
		}
	}
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = 0, top*1.05
	p.Y.Tick.Marker = linearTicks(0.25 * math.Ceil(top/3))
	p.NominalX(res.Kernels...)
	return save(p, vg.Points(max(420, float64(90*len(res.Kernels)))), 4*vg.Inch, path)
}

// drawFig9 draws the echo's p50 and p99 against the interactive share, one
// pair of lines per processor count, on a logarithmic time axis, with the
// 1 ms goal.
func drawFig9(res *Results, path string) error {
	p := logPlot(fmt.Sprintf("Figure 9: terminal echo response time against its share\n"+
		"one replay of %v at %g requests/s per point", res.EchoFor, res.EchoRate),
		"share of the interactive (high) priority (%); criterion share-(50−share)-50",
		"echo response time (ms, log scale)")
	var ys []float64
	i := 0
	for _, procs := range res.Procs {
		for _, q := range []struct {
			name string
			get  func(Latency) float64
		}{
			{"p50", func(l Latency) float64 { return inMs(l.P50) }},
			{"p99", func(l Latency) float64 { return inMs(l.P99) }},
		} {
			var pts plotter.XYs
			for _, sh := range res.Shares {
				if l := echoLatency(res.find(Record{Kind: kindShare, Procs: procs, Share: sh})); l.N > 0 {
					pts = append(pts, plotter.XY{X: sh, Y: lg(q.get(l))})
					ys = append(ys, q.get(l))
				}
			}
			if len(pts) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			points.Shape = plotutil.Shape(i)
			if q.name == "p50" {
				line.Dashes = dotted
			}
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s, P=%d", q.name, procs), line, points)
			i++
		}
	}
	if err := (refLine{y: lg(1), label: "goal: p99 ≤ 1 ms", style: dashed}).draw(p, 0, 55); err != nil {
		return err
	}
	p.X.Min, p.X.Max = 0, 55 // shares are in (0, 50]
	var ticks []plot.Tick
	for _, sh := range res.Shares {
		ticks = append(ticks, plot.Tick{Value: sh, Label: num(sh)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	decades(p, append(ys, 1))
	return save(p, 6*vg.Inch, 4*vg.Inch, path)
}

// Logarithmic time axes are drawn as linear axes of lg(milliseconds), with
// ticks labelled in milliseconds (see decades): plot.LogScale places the
// y label's glyph box at the arithmetic middle of the range, which pushes
// the plot down, and plot.LogTicks leaves out the label of a decade below 1.

// minMillis is the smallest time drawn on a logarithmic millisecond axis.
const minMillis = 1e-2

// lg is the height of a time in milliseconds on a logarithmic axis.
func lg(ms float64) float64 { return math.Log10(max(ms, minMillis)) }

// logPlot is a plot with a title, axis labels and a grid, for a
// logarithmic y axis.
func logPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// decades sets the logarithmic y axis to the whole decades around the
// times ys (in milliseconds), with a labelled tick at each power of ten and
// unlabelled ones between.
func decades(p *plot.Plot, ys []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, y := range ys {
		lo, hi = min(lo, lg(y)), max(hi, lg(y))
	}
	first, last := int(math.Floor(lo)), int(math.Ceil(hi+0.005))
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		ticks = append(ticks, plot.Tick{Value: float64(e), Label: num(math.Pow10(e))})
		for k := 2; k < 10 && e < last; k++ {
			ticks = append(ticks, plot.Tick{Value: float64(e) + math.Log10(float64(k))})
		}
	}
	p.Y.Min, p.Y.Max = float64(first), float64(last)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
}

// linearTicks labels a linear axis at every multiple of step.
func linearTicks(step float64) plot.TickerFunc {
	return func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for k := math.Ceil(lo / step); k*step <= hi; k++ {
			ticks = append(ticks, plot.Tick{Value: k * step, Label: num(k * step)})
		}
		return ticks
	}
}

// Line styles.
var (
	solid  []vg.Length
	dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
)

// refLine is a horizontal line for an expected value or a goal.
type refLine struct {
	y     float64
	label string
	style []vg.Length
}

// draw adds the line from x0 to x1, and its legend entry, to p.
func (r refLine) draw(p *plot.Plot, x0, x1 float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: r.y}, {X: x1, Y: r.y}})
	if err != nil {
		return err
	}
	l.Color = color.Gray{Y: 60}
	l.Width = vg.Points(1.2)
	l.Dashes = r.style
	p.Add(l)
	p.Legend.Add(r.label, l)
	return nil
}

// spreadPoints are points with a vertical bar each, such as the median of
// repetitions with a bar from their smallest to their largest value.
type spreadPoints struct {
	plotter.XYs
	plotter.YErrors
}

// add adds a point at (x, y) with a bar from lo to hi.
func (s *spreadPoints) add(x, y, lo, hi float64) {
	s.XYs = append(s.XYs, plotter.XY{X: x, Y: y})
	s.YErrors = append(s.YErrors, struct{ Low, High float64 }{y - lo, hi - y})
}

// draw adds the points and bars to p in the i-th colour and shape, under
// label in the legend.
func (s *spreadPoints) draw(p *plot.Plot, i int, label string) error {
	if len(s.XYs) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(s.XYs)
	if err != nil {
		return err
	}
	bars, err := plotter.NewYErrorBars(s)
	if err != nil {
		return err
	}
	sc.Color, sc.Shape, sc.Radius = plotutil.Color(i), plotutil.Shape(i), vg.Points(3.5)
	bars.Color, bars.CapWidth = plotutil.Color(i), vg.Points(6)
	p.Add(bars, sc)
	p.Legend.Add(label, sc)
	return nil
}

// save writes p to path as a PNG w wide (and as much wider as its legend
// needs) and h high, with the legend to the right of the plot.
func save(p *plot.Plot, w, h vg.Length, path string) error {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	leg.Top, leg.Left = true, true
	pad := vg.Points(10)
	legW := leg.Rectangle(draw.Canvas{}).Size().X + 2*pad
	img := vgimg.New(w+legW, h)
	dc := draw.New(img)
	dc.SetColor(color.White) // the background is transparent otherwise
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	titleH := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	leg.Draw(draw.Crop(dc, w+pad, -pad, 0, -titleH-pad))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveByName finishes a plot of response times over named loads: the 1 ms
// goal as a line across them, decades on the y axis spanning ys, the
// loads' names under their points; then saves it width wide.
func saveByName(p *plot.Plot, names []string, ys []float64, width vg.Length, path string) error {
	x0, x1 := -0.5, float64(len(names))-0.5
	if err := (refLine{y: lg(1), label: "goal: p99 ≤ 1 ms", style: dashed}).draw(p, x0, x1); err != nil {
		return err
	}
	p.X.Min, p.X.Max = x0, x1
	decades(p, ys)
	p.NominalX(names...)
	return save(p, width, 4*vg.Inch, path)
}
