package harness

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/bench/latency"
)

// Spread is the median of some samples with their range.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// spreadOf summarises xs; the zero Spread (N = 0) stands for no data.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func seconds(ds []time.Duration) []float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = d.Seconds()
	}
	return xs
}

// ratios gives num/x for every x of den (a baseline median over each run),
// or x/den when invert is set.
func ratios(num float64, xs []float64, invert bool) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		switch {
		case invert && num > 0:
			out = append(out, x/num)
		case !invert && x > 0:
			out = append(out, num/x)
		}
	}
	return out
}

// format prints the median with its range to the given decimals.
func (s Spread) format(decimals int, unit string) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.*f%s", decimals, s.Median, unit)
	}
	return fmt.Sprintf("%.*f%s (%.*f–%.*f)", decimals, s.Median, unit, decimals, s.Min, decimals, s.Max)
}

// Latency summarises response times pooled over the runs of a setting,
// with the nearest-rank percentiles of package latency.
type Latency = latency.Summary

// inMs is d in milliseconds, for charts and ratios.
func inMs(d time.Duration) float64 { return d.Seconds() * 1e3 }

// ms prints a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Collector is what Go's collector did over a measurement.
type Collector struct {
	Cycles       uint32        `json:"cycles"`
	PerSecond    float64       `json:"per_second"`
	LongestPause time.Duration `json:"longest_pause_ns"` // of the last 256 cycles at most
}

// collectorSpan measures the collector between startCollector and stop.
type collectorSpan struct {
	start time.Time
	gcs   uint32
}

func startCollector() collectorSpan {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return collectorSpan{start: time.Now(), gcs: m.NumGC}
}

func (c collectorSpan) stop() *Collector {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	d := time.Since(c.start)
	out := &Collector{Cycles: m.NumGC - c.gcs}
	if d > 0 {
		out.PerSecond = float64(out.Cycles) / d.Seconds()
	}
	for i := range min(out.Cycles, uint32(len(m.PauseNs))) {
		out.LongestPause = max(out.LongestPause, time.Duration(m.PauseNs[(m.NumGC-1-i)%uint32(len(m.PauseNs))]))
	}
	return out
}
