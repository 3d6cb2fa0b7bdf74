package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Classes of jobs. hi is the frequent short high-priority class, lo the
// rare long low-priority one, as in the notebook.
const (
	hi = iota
	lo
	nClasses
)

// classNames are the names used in the table, the JSON and the job types.
var classNames = [nClasses]string{"hi", "lo"}

// The notebook's workload: hi jobs take 0.5 s on average (service rate 2),
// lo jobs 1 s and arrive 0.2 times a second, so ρ_L = 0.2.
const (
	meanServiceHi = 0.5
	meanServiceLo = 1.0
	notebookRhoLo = 0.2
)

// Service distributions.
const (
	distExp       = "exp"       // exponential, as in the notebook
	distLognormal = "lognormal" // heavy-tailed, same mean
)

// lognormalSigma is the σ of the heavy-tailed service time: E[S²] is
// e^{σ²} ≈ 9.5 times the squared mean (exponential: 2), and the
// coefficient of variation about 2.9 (exponential: 1). Every moment stays
// finite, so Cobham's formula still applies and its estimate converges.
const lognormalSigma = 1.5

// Workload describes one open two-class system: Poisson arrivals, service
// times of a given distribution, on Slots servers. Rho values are loads
// per slot: the arrival rates are scaled by Slots so that the load of one
// slot stays the same when slots are added.
type Workload struct {
	RhoHi, RhoLo float64
	Dist         string
	Slots        int
	// Horizon is how long arrivals go on, in seconds; the system is
	// drained afterwards so every arrival is measured.
	Horizon float64
	// Warmup is the start of the measured arrivals, in seconds: jobs that
	// arrive into the empty system before it are served but not counted.
	Warmup float64
	Seed   uint64
}

// meanService is the mean service time of a class, in seconds.
func meanService(class int) float64 {
	if class == hi {
		return meanServiceHi
	}
	return meanServiceLo
}

// rate is the arrival rate of a class, per second.
func (w Workload) rate(class int) float64 {
	rho := w.RhoHi
	if class == lo {
		rho = w.RhoLo
	}
	return rho * float64(w.Slots) / meanService(class)
}

// secondMoment is E[S²] of a class's service time.
func (w Workload) secondMoment(class int) float64 {
	m := meanService(class)
	if w.Dist == distLognormal {
		return m * m * math.Exp(lognormalSigma*lognormalSigma)
	}
	return 2 * m * m
}

// arrival is one job of the workload.
type arrival struct {
	At      float64 // seconds
	Class   int
	Service float64 // seconds
}

// Arrivals draws the workload's jobs in order of arrival. Each class has
// its own random stream, derived from the seed, so the hi arrivals of a
// seed are the same whatever ρ_L is.
func (w Workload) Arrivals() []arrival {
	var out []arrival
	for class := range nClasses {
		r := rand.New(rand.NewPCG(w.Seed, uint64(class)+1))
		rate := w.rate(class)
		if rate <= 0 {
			continue
		}
		m := meanService(class)
		for t := r.ExpFloat64() / rate; t < w.Horizon; t += r.ExpFloat64() / rate {
			out = append(out, arrival{At: t, Class: class, Service: w.draw(r, m)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// draw is one service time of mean m.
func (w Workload) draw(r *rand.Rand, m float64) float64 {
	if w.Dist == distLognormal {
		// The lognormal's mean is e^{μ+σ²/2}.
		mu := math.Log(m) - lognormalSigma*lognormalSigma/2
		return math.Exp(mu + lognormalSigma*r.NormFloat64())
	}
	return m * r.ExpFloat64()
}

// stable reports whether the total load is below one: otherwise the
// backlog grows for as long as arrivals go on, and mean waits depend on
// the horizon rather than converge.
func (w Workload) stable() bool { return w.RhoHi+w.RhoLo < 1 }

// Cobham is the mean wait in queue of a class in a non-preemptive M/G/1
// queue with static priorities (hi above lo), after Cobham (1954):
//
//	W_k = W0 / ((1 − σ_{k−1})(1 − σ_k)),  W0 = Σ λ_i E[S_i²] / 2,
//
// σ_k being the load of the classes 1..k. It reports false where no
// formula applies: more than one slot, an unstable class, or an
// overloaded server.
func (w Workload) Cobham(class int) (float64, bool) {
	if w.Slots != 1 {
		return 0, false
	}
	w0 := 0.0
	for c := range nClasses {
		w0 += w.rate(c) * w.secondMoment(c) / 2
	}
	above, upto := 0.0, w.RhoHi // σ_{k−1}, σ_k
	if class == lo {
		above, upto = w.RhoHi, w.RhoHi+w.RhoLo
	}
	// W0 counts every class at its arrival rate, so the formula needs the
	// lo class to be served as fast as it arrives: a total load of at
	// most one (at exactly one the lo class's wait diverges, but its
	// throughput still matches). Beyond, the lo backlog keeps the server
	// always busy and the hi class's wait differs too.
	if upto >= 1 || w.RhoHi+w.RhoLo > 1+1e-9 {
		return 0, false
	}
	return w0 / ((1 - above) * (1 - upto)), true
}

// Notebook is the notebook's closed form for the lo class,
// W_L = s̄_L / ((1 − ρ_H)(1 − ρ_H − ρ_L)): Cobham's with W0 replaced by
// the lo class's mean service time. It has no hi-class counterpart.
func (w Workload) Notebook() (float64, bool) {
	if w.Slots != 1 || !w.stable() {
		return 0, false
	}
	return meanServiceLo / ((1 - w.RhoHi) * (1 - w.RhoHi - w.RhoLo)), true
}

// String names the workload in messages.
func (w Workload) String() string {
	return fmt.Sprintf("ρ_H=%.2f ρ_L=%.2f %s slots=%d seed=%d", w.RhoHi, w.RhoLo, w.Dist, w.Slots, w.Seed)
}
