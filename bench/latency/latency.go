// Package latency summarises response times: the nearest-rank percentiles
// that every table of fairly's benchmark suite quotes, computed in one
// place so that a p99 means the same wherever it is printed.
//
// The nearest-rank q-quantile of n sorted samples is the sample of rank
// ⌈q·n⌉ (1-based): always an observed value, never an interpolation, so a
// p99 of 100 samples is the second-worst of them. Quote a p99 only from
// enough samples (a thousand or more) for it to be more than an anecdote.
package latency

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Quantile is the nearest-rank q-quantile of sorted, which must be in
// ascending order and not empty; q is clamped to [0, 1].
func Quantile[T cmp.Ordered](sorted []T, q float64) T {
	q = min(max(q, 0), 1)
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// Summary describes a set of response times.
type Summary struct {
	// N counts the samples; Lost the requests never answered, which no
	// percentile includes.
	N, Lost int
	// Mean, the nearest-rank percentiles and the largest sample.
	Mean, P50, P90, P99, P999, Max time.Duration
}

// Of summarises d, which it does not change; lost is carried into the
// Summary. With no samples every time is zero.
func Of(d []time.Duration, lost int) Summary {
	if len(d) == 0 {
		return Summary{Lost: lost}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return Summary{
		N: len(s), Lost: lost, Mean: sum / time.Duration(len(s)),
		P50: Quantile(s, 0.50), P90: Quantile(s, 0.90), P99: Quantile(s, 0.99), P999: Quantile(s, 0.999), Max: s[len(s)-1],
	}
}
