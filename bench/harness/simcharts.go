package harness

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/fairlyprompt/fairly/internal/sim"
)

// The sim experiment's charts: one point per kernel, criterion and
// processor count (the simulation is deterministic, so there is no spread
// to show), P on the x axis, the expected value and the goal as lines.

// simSeries is one series of a sim chart: a label and the value at each P.
type simSeries struct {
	label string
	y     func(p int) (float64, bool)
}

// drawSim draws series against the processor counts of res on p, with the
// reference lines, and saves it.
func drawSim(res *Results, p *plot.Plot, series []simSeries, refs []refLine, top float64, path string) error {
	n := len(res.Procs)
	width := 0.6 / float64(max(1, len(series)))
	for i, s := range series {
		var pts spreadPoints
		for x, procs := range res.Procs {
			if y, ok := s.y(procs); ok {
				pts.add(float64(x)+width*(float64(i)-float64(len(series)-1)/2), y, y, y)
				top = max(top, y)
			}
		}
		if err := pts.draw(p, i, s.label); err != nil {
			return err
		}
	}
	x0, x1 := -0.5, float64(n)-0.5
	for _, l := range refs {
		if err := l.draw(p, x0, x1); err != nil {
			return err
		}
	}
	labels := make([]string, n)
	for i, procs := range res.Procs {
		labels[i] = fmt.Sprint(procs)
	}
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = 0, top*1.08
	p.NominalX(labels...)
	return save(p, 7*vg.Inch, 4*vg.Inch, path)
}

// simPerKernel gives a series per criterion and kernel of value v of the
// records of kind, labelled by label.
func simPerKernel(res *Results, kernels []string, kind string, crits []Criterion, label func(k string, c Criterion) string, v func(*SimRecord) float64) []simSeries {
	var out []simSeries
	for _, c := range crits {
		for _, k := range kernels {
			out = append(out, simSeries{label: label(k, c), y: func(p int) (float64, bool) {
				rec := res.find(Record{Kind: kind, Kernel: k, Procs: p, Criterion: c.String()})
				if rec == nil || rec.SimRecord == nil {
					return 0, false
				}
				return v(rec.SimRecord), true
			}})
		}
	}
	return out
}

// byCriterion labels a series with its kernel and criterion.
func byCriterion(k string, c Criterion) string { return fmt.Sprintf("%s, criterion %v", k, c) }

func drawSimStretch(res *Results, kernels []string, path string) error {
	p := logPlot("Simulated stretch of the low-priority kernel, measured / expected\none deterministic run per point",
		"P (virtual workers)", "measured / expected stretch (ratio)")
	series := simPerKernel(res, kernels, kindSim, res.Criteria, byCriterion, func(r *SimRecord) float64 { return r.Stretch / r.Expected })
	return drawSim(res, p, series, []refLine{
		{y: 1, label: "expected: stretch = 1/F(low)", style: solid},
		{y: 1.15, label: "goal: ≤ 1.15", style: dashed},
	}, 1.2, path)
}

func drawSimResponse(res *Results, kernels []string, path string) error {
	p := logPlot("Simulated response of the top priority, p99\none deterministic run per point",
		"P (virtual workers)", fmt.Sprintf("p99 response time (rounds of %v)", time.Duration(sim.DefaultParams().Quantum)))
	series := simPerKernel(res, kernels, kindSim, res.Criteria, byCriterion, func(r *SimRecord) float64 { return r.ResponseP99Rounds })
	series = append(series, simPerKernel(res, kernels, kindSimWTA, []Criterion{simWTA}, byCriterion, func(r *SimRecord) float64 { return r.ResponseP99Rounds })...)
	return drawSim(res, p, series, []refLine{{y: 2, label: "goal: p99 ≤ 2 rounds", style: dashed}}, 2.2, path)
}

func drawSimSpeedup(res *Results, kernels []string, path string) error {
	p := logPlot("Simulated speedup of each kernel alone, over its work/span bound\none deterministic run per point",
		"P (virtual workers)", "speedup / min(P, work/span) (ratio)")
	kernelOnly := func(k string, _ Criterion) string { return k }
	series := simPerKernel(res, kernels, kindSim, res.Criteria[:1], kernelOnly, func(r *SimRecord) float64 { return r.Speedup / r.BoundSpeedup })
	return drawSim(res, p, series, []refLine{
		{y: 1, label: "bound: min(P, work/span)", style: solid},
		{y: 0.9, label: "goal: ≥ 0.9", style: dashed},
	}, 1.05, path)
}
