package harness

import (
	"fmt"
	"math"
	"runtime/metrics"
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

// pairRatios sets r's SeqRatios to each time over the sequential time
// paired with it, and SeqRatio to their median.
func (r *Record) pairRatios() {
	r.SeqRatios = nil
	for i := range min(len(r.Times), len(r.SeqTimes)) {
		if r.SeqTimes[i] > 0 {
			r.SeqRatios = append(r.SeqRatios, float64(r.Times[i])/float64(r.SeqTimes[i]))
		}
	}
	r.SeqRatio = spreadOf(r.SeqRatios).Median
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

// msOf is ms for a figure already in milliseconds, as the prompt
// experiment's summaries hold them.
func msOf(x float64) string { return ms(time.Duration(x * float64(time.Millisecond))) }

// Collector is what Go's collector did over a measurement.
type Collector struct {
	Cycles       uint32        `json:"cycles"`
	PerSecond    float64       `json:"per_second"`
	LongestPause time.Duration `json:"longest_pause_ns"` // the upper bound of its bucket in runtime/metrics' histogram
	// OtherPauses counts the stop-the-world pauses for anything but the
	// collector: in a run of the harness, GOMAXPROCS changes (the harness
	// reads runtime/metrics, which stops nothing, and not MemStats).
	OtherPauses uint64 `json:"other_pauses"`
	// AllocBytes are the bytes the process allocated on the heap, and
	// AllocPerSecond the same a second of the span: the rate at which the
	// load, the echo and the harness together drive the collector.
	AllocBytes     uint64  `json:"alloc_bytes"`
	AllocPerSecond float64 `json:"alloc_bytes_per_second"`
}

// The runtime/metrics samples a collectorSpan reads. Reading them stops
// nothing, unlike runtime.ReadMemStats, which stops the world: a reading
// while an echo is measured must not add a pause of its own.
const (
	metricCycles      = "/gc/cycles/total:gc-cycles"
	metricGCPauses    = "/sched/pauses/total/gc:seconds"
	metricOtherPauses = "/sched/pauses/total/other:seconds"
	metricAllocs      = "/gc/heap/allocs:bytes"
)

// collectorSpan measures the collector between startCollector and stop.
type collectorSpan struct {
	start   time.Time
	samples []metrics.Sample
}

func readCollector() []metrics.Sample {
	s := []metrics.Sample{{Name: metricCycles}, {Name: metricGCPauses}, {Name: metricOtherPauses}, {Name: metricAllocs}}
	metrics.Read(s)
	return s
}

func startCollector() collectorSpan {
	return collectorSpan{start: time.Now(), samples: readCollector()}
}

func (c collectorSpan) stop() *Collector {
	end := readCollector()
	d := time.Since(c.start)
	out := &Collector{}
	if c.samples[0].Value.Kind() == metrics.KindUint64 {
		out.Cycles = uint32(end[0].Value.Uint64() - c.samples[0].Value.Uint64())
	}
	if c.samples[3].Value.Kind() == metrics.KindUint64 {
		out.AllocBytes = end[3].Value.Uint64() - c.samples[3].Value.Uint64()
	}
	if d > 0 {
		out.PerSecond = float64(out.Cycles) / d.Seconds()
		out.AllocPerSecond = float64(out.AllocBytes) / d.Seconds()
	}
	if before, after, ok := histograms(c.samples[1], end[1]); ok {
		for i := len(after.Counts) - 1; i >= 0; i-- {
			if after.Counts[i] > before.Counts[i] {
				top := after.Buckets[i+1]
				if math.IsInf(top, 1) {
					top = after.Buckets[i]
				}
				out.LongestPause = time.Duration(top * float64(time.Second))
				break
			}
		}
	}
	if before, after, ok := histograms(c.samples[2], end[2]); ok {
		for i := range after.Counts {
			out.OtherPauses += after.Counts[i] - before.Counts[i]
		}
	}
	return out
}

// histograms gives the two readings of a histogram metric, if both are
// histograms of the same buckets.
func histograms(a, b metrics.Sample) (*metrics.Float64Histogram, *metrics.Float64Histogram, bool) {
	if a.Value.Kind() != metrics.KindFloat64Histogram || b.Value.Kind() != metrics.KindFloat64Histogram {
		return nil, nil, false
	}
	ha, hb := a.Value.Float64Histogram(), b.Value.Float64Histogram()
	return ha, hb, len(ha.Counts) == len(hb.Counts)
}
