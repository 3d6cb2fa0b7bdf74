package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// minWait keeps waits plottable on a logarithmic axis: a smaller wait
// (0 when a job found a free slot) is drawn at minWait, as the axis label
// says.
const minWait = 1e-3

// fitLogAxis makes a's range one that a logarithmic scale can draw: at
// least floor, and of positive width. Values below floor are drawn at
// floor already; the range needs its own care because gonum widens an
// empty one (a single load and seed: Min = Max) by 1 either side, which
// reaches below 0 for waits under a second, and its log ticks panic on
// that. An empty range becomes a factor of 3 either side of its value.
func fitLogAxis(a *plot.Axis, floor float64) {
	if !(a.Min >= floor) || math.IsInf(a.Min, 1) { // also NaN, and +Inf when nothing was drawn
		a.Min = floor
	}
	if !(a.Max > a.Min) || math.IsInf(a.Max, 1) {
		a.Min, a.Max = a.Min/3, a.Min*3
	}
}

// metric picks a statistic of a row and its spread over seeds.
type metric struct {
	name string
	get  func(Row) (v, lo, hi float64)
}

var (
	meanWait = metric{"mean wait", func(r Row) (float64, float64, float64) {
		return r.MeanWait, r.MeanWaitMin, r.MeanWaitMax
	}}
	p99Wait = metric{"p99 wait", func(r Row) (float64, float64, float64) {
		return r.P99Wait, r.P99WaitMin, r.P99WaitMax
	}}
)

// drawCharts writes the charts into dir and returns their paths.
func drawCharts(res *Results, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	save := func(name string, err error) error {
		if err == nil {
			paths = append(paths, filepath.Join(dir, name))
		}
		return err
	}
	for _, s := range res.Plan.Setups {
		name := fmt.Sprintf("starvation-%dslot-%s", s.Slots, s.Dist)
		if err := save(name+"-mean.png", drawSweep(res, s, meanWait, filepath.Join(dir, name+"-mean.png"))); err != nil {
			return paths, err
		}
		if err := save(name+"-p99.png", drawSweep(res, s, p99Wait, filepath.Join(dir, name+"-p99.png"))); err != nil {
			return paths, err
		}
	}
	if len(res.Series) > 0 {
		if err := save("starvation-series.png", drawSeries(res, filepath.Join(dir, "starvation-series.png"))); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// drawSweep draws a statistic against ρ_H, one panel per class, one line
// per policy with its spread over seeds, Cobham's formula and, for the lo
// class, the notebook's.
func drawSweep(res *Results, s Setup, m metric, path string) error {
	row := make([]*plot.Plot, nClasses)
	for c := range nClasses {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s class: %s, %s, ρ_L = %g\npoint: the jobs of %d seeds pooled, bar: the per-seed min–max",
			classNames[c], m.name, s, res.Plan.RhoLo, res.Plan.Seeds)
		p.X.Label.Text = "load of the hi class ρ_H (fraction of the slots' capacity)"
		p.Y.Label.Text = fmt.Sprintf("%s (s, log scale; < %gs drawn at %g)", m.name, minWait, minWait)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for i, pol := range res.Plan.Policies {
			if err := addPolicy(p, res.find(pol.Name, s, classNames[c]), m, i, len(res.Plan.Policies), pol); err != nil {
				return err
			}
		}
		if m.name == meanWait.name {
			addTheory(p, res, s, c)
		}
		fitLogAxis(&p.Y, minWait)
		addOverload(p, res.Plan.RhoLo) // spans the axis: after its range is fixed
		p.X.Min, p.X.Max = 0, 1
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		row[c] = p
	}
	return savePanels(path, [][]*plot.Plot{row}, 13*vg.Inch, 5.5*vg.Inch)
}

// addPolicy draws one policy's line with min–max bars over seeds. The
// policies' points are shifted a little apart so that the bars do not
// hide each other.
func addPolicy(p *plot.Plot, rows []Row, m metric, i, n int, pol Policy) error {
	if len(rows) == 0 {
		return nil
	}
	type errPoints struct {
		plotter.XYs
		plotter.YErrors
	}
	pts := errPoints{XYs: make(plotter.XYs, len(rows)), YErrors: make(plotter.YErrors, len(rows))}
	shift := 0.004 * (float64(i) - float64(n-1)/2)
	for j, r := range rows {
		v, lo, hi := m.get(r)
		v = math.Max(v, minWait)
		pts.XYs[j] = plotter.XY{X: r.RhoHi + shift, Y: v}
		pts.YErrors[j].Low = v - math.Max(lo, minWait)
		pts.YErrors[j].High = math.Max(hi, minWait) - v
	}
	line, points, err := plotter.NewLinePoints(pts.XYs)
	if err != nil {
		return err
	}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	k := policyIndex(pol.Name)
	c := plotutil.Color(k)
	line.Color, points.Color, bars.Color = c, c, c
	points.Shape = plotutil.Shape(k)
	p.Add(line, points, bars)
	p.Legend.Add(pol.Label, line, points)
	return nil
}

// addTheory draws Cobham's mean wait for static priority and, for the lo
// class, the notebook's closed form, up to just below the load where they
// diverge.
func addTheory(p *plot.Plot, res *Results, s Setup, class int) {
	at := func(rho float64) Workload {
		return Workload{RhoHi: rho, RhoLo: res.Plan.RhoLo, Dist: s.Dist, Slots: s.Slots}
	}
	top := math.Min(0.999, 1-res.Plan.RhoLo) // the hi formula holds up to full load
	if class == lo {
		top = 1 - res.Plan.RhoLo - 0.005
	}
	if _, ok := at(0.01).Cobham(class); !ok || top <= 0.01 {
		return
	}
	cobham := plotter.NewFunction(func(rho float64) float64 {
		v, _ := at(rho).Cobham(class)
		return math.Max(v, minWait)
	})
	cobham.XMin, cobham.XMax, cobham.Samples = 0.01, top, 400
	cobham.Color = color.Black
	cobham.Width = vg.Points(1.5)
	cobham.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(cobham)
	p.Legend.Add("Cobham (static priority)", cobham)
	if class != lo || s.Dist != distExp {
		return
	}
	nb := plotter.NewFunction(func(rho float64) float64 {
		v, _ := at(rho).Notebook()
		return math.Max(v, minWait)
	})
	nb.XMin, nb.XMax, nb.Samples = 0.01, top, 400
	nb.Color = color.Gray{Y: 120}
	nb.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(nb)
	p.Legend.Add("notebook's closed form", nb)
}

// addOverload marks ρ_H + ρ_L = 1: to its right the backlog grows for as
// long as arrivals go on.
func addOverload(p *plot.Plot, rhoLo float64) {
	x := 1 - rhoLo
	if x >= 1 {
		return
	}
	edge, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
	if err != nil {
		return
	}
	edge.Color = color.RGBA{R: 200, A: 255}
	edge.Width = vg.Points(1)
	edge.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(edge)
	p.Legend.Add("ρ_H + ρ_L = 1: overloaded to the right", edge)
}

// drawSeries draws the time-series runs: one panel per policy with every
// job's wait against its arrival and the hi class's mean wait per window,
// then one panel with the wait each policy adds to the hi class, per
// window, over static priority on the same arrivals: the price the hi
// class pays for serving the lo class sooner, and how it is spread over
// time.
func drawSeries(res *Results, path string) error {
	var static []served
	for _, s := range res.Series {
		if s.Policy.Name == "static" {
			static = s.Jobs
		}
	}
	var rows [][]*plot.Plot
	for _, s := range res.Series {
		p := plot.New()
		st := summarise(s.Jobs)
		p.Title.Text = fmt.Sprintf("%s, ρ_H = %g, ρ_L = %g, 1 slot: hi mean %.1fs, lo mean %.1fs, hi window CV %.2f",
			s.Policy.Label, s.W.RhoHi, s.W.RhoLo, st[hi].Mean, st[lo].Mean, st[hi].WindowCV)
		p.X.Label.Text = "arrival time (s)"
		p.Y.Label.Text = fmt.Sprintf("wait (s, log; < %gs drawn at %g)", seriesFloor, seriesFloor)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for c := range nClasses {
			var pts plotter.XYs
			for _, j := range s.Jobs {
				if j.Class == c {
					pts = append(pts, plotter.XY{X: j.Arrive, Y: math.Max(j.Wait(), seriesFloor)})
				}
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.Color = classColor(c)
			sc.Radius = vg.Points(1.2)
			sc.Shape = draw.CircleGlyph{}
			p.Add(sc)
			p.Legend.Add(classNames[c]+" job's wait", sc)
		}
		starts, means := windowMeans(s.Jobs, hi)
		for k := range means {
			means[k] = math.Max(means[k], seriesFloor) // a window whose jobs all found a free slot
		}
		if err := addLine(p, starts, means, fmt.Sprintf("hi mean wait per %gs window", window), color.Black); err != nil {
			return err
		}
		p.Y.Min = seriesFloor
		fitLogAxis(&p.Y, seriesFloor)
		p.Legend.Top, p.Legend.Left = true, true
		rows = append(rows, []*plot.Plot{p})
	}
	if static != nil && len(res.Series) > 1 {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("wait added to the hi class over static priority on the same arrivals, per %gs window", window)
		p.X.Label.Text = "arrival time (s)"
		p.Y.Label.Text = "added mean wait (s)"
		p.Add(plotter.NewGrid())
		_, base := windowMeans(static, hi)
		for _, s := range res.Series {
			if s.Policy.Name == "static" {
				continue
			}
			starts, means := windowMeans(s.Jobs, hi)
			if len(means) != len(base) {
				continue
			}
			added := make([]float64, len(means))
			for k := range means {
				added[k] = means[k] - base[k]
			}
			label := s.Policy.Label
			if b, ok := burstCV(means, base); ok {
				label += fmt.Sprintf(" (burst CV %.2f)", b)
			}
			if err := addLine(p, starts, added, label, plotutil.Color(policyIndex(s.Policy.Name))); err != nil {
				return err
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		rows = append(rows, []*plot.Plot{p})
	}
	return savePanels(path, rows, 11*vg.Inch, vg.Length(len(rows))*3*vg.Inch)
}

// seriesFloor is the smallest wait drawn on the time series' log axis.
const seriesFloor = 0.01

// addLine adds a line through per-window values, drawn at the windows'
// middles.
func addLine(p *plot.Plot, starts, values []float64, label string, c color.Color) error {
	pts := make(plotter.XYs, len(starts))
	for i := range starts {
		pts[i] = plotter.XY{X: starts[i] + window/2, Y: values[i]}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// classColor is a class's colour in the time series.
func classColor(c int) color.Color {
	if c == hi {
		return color.NRGBA{R: 30, G: 100, B: 200, A: 160}
	}
	return color.NRGBA{R: 220, G: 80, B: 20, A: 220}
}

// savePanels draws a grid of plots into one PNG.
func savePanels(path string, plots [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	// The background is transparent otherwise.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Points(20), PadY: vg.Points(20),
		PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
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
