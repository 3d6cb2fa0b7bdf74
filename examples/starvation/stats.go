package main

import (
	"math"
	"slices"

	"github.com/fairlyprompt/fairly/bench/latency"
)

// window is the length of the windows over which the oscillation of
// service is measured, in seconds: long beside a hi job (0.5 s), so that
// a window's mean is not just noise, twice the aging threshold (15 s), so
// that a burst of aged lo jobs shows in one or two windows rather than
// being averaged away, and short beside a run, so that a run has dozens
// of windows.
const window = 30.0

// classStats summarises the waits of one class in one run.
type classStats struct {
	N              int
	Mean, P99, Max float64
	WindowCV       float64 // coefficient of variation of the windows' mean waits
	waits          []float64
	windows        []float64 // mean wait per window
}

// summarise computes per-class statistics of one run's jobs.
func summarise(jobs []served) [nClasses]classStats {
	var st [nClasses]classStats
	for c := range nClasses {
		var waits []float64
		for _, j := range jobs {
			if j.Class == c {
				waits = append(waits, j.Wait())
			}
		}
		st[c] = describe(waits)
		_, st[c].windows = windowMeans(jobs, c)
		st[c].WindowCV = cv(st[c].windows)
	}
	return st
}

// describe gives the count, mean, p99 and maximum of waits.
func describe(waits []float64) classStats {
	s := classStats{N: len(waits), waits: waits}
	if len(waits) == 0 {
		return s
	}
	sum := 0.0
	for _, w := range waits {
		sum += w
		s.Max = math.Max(s.Max, w)
	}
	s.Mean = sum / float64(len(waits))
	s.P99 = percentile(waits, 0.99)
	return s
}

// percentile is the nearest-rank q-quantile of xs (which it does not
// modify), as fairbench's tables quote it; 0 if xs is empty.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return latency.Quantile(s, q)
}

// windowMeans is the mean wait of a class's jobs in each window of
// arrival times, with the windows' start times; empty windows are left
// out.
func windowMeans(jobs []served, class int) (starts, means []float64) {
	if len(jobs) == 0 {
		return nil, nil
	}
	t0 := jobs[0].Arrive
	var sum float64
	var n int
	cur := 0
	flush := func() {
		if n > 0 {
			starts = append(starts, t0+float64(cur)*window)
			means = append(means, sum/float64(n))
		}
		sum, n = 0, 0
	}
	for _, j := range jobs {
		if j.Class != class {
			continue
		}
		k := int((j.Arrive - t0) / window)
		if k != cur {
			flush()
			cur = k
		}
		sum += j.Wait()
		n++
	}
	flush()
	return starts, means
}

// cv is the coefficient of variation (standard deviation over mean) of
// xs: for a class's mean wait over consecutive windows, near zero for
// smooth service, large when waits come in bursts.
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m, sd := meanSD(xs)
	if m == 0 {
		return 0
	}
	return sd / m
}

// burstCV measures how a policy spreads the delay it adds to a class over
// time: the coefficient of variation, over windows, of the class's mean
// wait minus its mean wait under static priority on the same arrivals.
// The class's own bursts of arrivals, which every policy sees alike,
// cancel out, and what is left is the policy's doing: large when the
// extra wait comes in bursts, small when it is spread evenly. It reports
// false when the windows do not pair up or the policy adds no wait.
func burstCV(windows, static []float64) (float64, bool) {
	if len(windows) != len(static) || len(windows) < 2 {
		return 0, false
	}
	d := make([]float64, len(windows))
	for i := range windows {
		d[i] = windows[i] - static[i]
	}
	if m, _ := meanSD(d); m <= 1e-9 {
		return 0, false
	}
	return cv(d), true
}

// meanSD is the mean and sample standard deviation of xs.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
