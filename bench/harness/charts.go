package harness

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// drawFig8 draws actual/expected stretch as grouped bars: one group per
// kernel, one bar per criterion and processor count.
func drawFig8(res *Results, path string) error {
	p := plot.New()
	p.Title.Text = "Actual / expected stretch of the low-priority kernel"
	p.Y.Label.Text = "actual / expected stretch"
	p.Y.Min = 0
	series := len(res.Criteria) * len(res.Procs)
	width := vg.Points(math.Min(18, 240/float64(max(1, series*len(res.Kernels)))))
	p.Add(plotter.NewGrid())
	top := 1.0
	i := 0
	for _, c := range res.Criteria {
		for _, procs := range res.Procs {
			vals := make(plotter.Values, len(res.Kernels))
			for j, k := range res.Kernels {
				vals[j] = stretchRatio(res, k, procs, c).Median
				top = math.Max(top, vals[j])
			}
			bars, err := plotter.NewBarChart(vals, width)
			if err != nil {
				return err
			}
			bars.Color = plotutil.Color(i)
			bars.LineStyle.Width = 0
			bars.Offset = width * vg.Length(float64(i)-float64(series-1)/2)
			p.Add(bars)
			p.Legend.Add(fmt.Sprintf("%v, P=%d", c, procs), bars)
			i++
		}
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 100}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.Y.Max = top * (1.15 + 0.08*float64(series)) // headroom for the legend
	p.Legend.Top = true
	p.NominalX(res.Kernels...)
	return p.Save(vg.Points(max(360, float64(80*len(res.Kernels)))), 4*vg.Inch, path)
}

// drawFig9 draws the echo's p50 and p99 against the interactive share, one
// pair of lines per processor count, on a logarithmic time axis.
func drawFig9(res *Results, path string) error {
	p := logPlot("Terminal echo response time against the interactive share", "interactive share (%)", "response time (ms)")
	p.X.Min, p.X.Max = 0, 55 // shares are in (0, 50]
	top := 0.0
	i := 0
	for _, procs := range res.Procs {
		for _, q := range []struct {
			name string
			get  func(Latency) float64
		}{
			{"p50", func(l Latency) float64 { return l.P50.Seconds() * 1e3 }},
			{"p99", func(l Latency) float64 { return l.P99.Seconds() * 1e3 }},
		} {
			var pts plotter.XYs
			for _, sh := range res.Shares {
				if l := latency(res.find(Record{Kind: kindShare, Procs: procs, Share: sh})); l.N > 0 {
					pts = append(pts, plotter.XY{X: sh, Y: math.Max(q.get(l), 1e-3)}) // a log axis needs > 0
					top = math.Max(top, pts[len(pts)-1].Y)
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
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s, P=%d", q.name, procs), line, points)
			i++
		}
	}
	if top > 0 {
		p.Y.Max = top * math.Pow(3, float64(i)/2) // headroom for the legend on the log axis
	}
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// logPlot is a plot with a title, axis labels, a logarithmic y axis and a grid.
func logPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	return p
}
