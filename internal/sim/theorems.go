package sim

import (
	"fmt"
	"math"
	"slices"
)

// The paper's bounds, checked on every run. The paper states them for an
// idealised scheduler that samples a priority at every step, in expectation;
// fairly samples once per round of Quantum and switches at preemption
// points, so each bound gets the delays those add (docs/theory.md, "From the
// theorems to a runtime"): up to two rounds for the alignment of the rounds
// (one to start, one of the sequence's discrepancy), an interrupt I, and the
// longest stretch G of a thread's code without a preemption point. And
// fairly is not greedy: a fork waits on its goroutine's lazy stack until a
// due preemption point promotes it (within I, when the ticker raises the
// worker's attention, plus G to the next point), then in the bank until a
// deal moves it (within the deal interval δ). So every fork level on the
// critical path may add I + G + δ to the span, as in work stealing with
// private deques (Acar, Charguéraud, Rainey, PPoPP 2013). And after a
// barrier (a level of BFS, a phase of sort) the workers that went idle
// sleep, having posted one request each; work reaches them by random deals,
// a push rumour: log2 P + ln P deal intervals to reach all P (Pittel, 1987).
//
//   Theorem 2 (stretch). The kernel, all at priority lo with F(lo) > 0,
//   work W (processor time it took, runtime operations and detached
//   computing included), span S,
//   fork depth d and b barriers, with
//   S' = S + d·(I + G + δ) + b·(log2 P + ln P)·δ:
//
//     T ≤ (W + S'·(P−1)) / (P·F(lo)) + 2Q + I + G
//
//   Theorem 3 (response). An interactive thread a at the top priority, with
//   F(⊀top) = F(top) > 0, span S_a (its work) and competitor work W_a (the
//   interactive work that arrived while it was waiting, a's own included):
//
//     R(a) ≤ (W_a/P + S_a) / F(top) + Q + I + G

// Bound is one checked inequality: Value ≤ Limit, in nanoseconds.
type Bound struct {
	Name  string
	Value int64
	Limit int64
}

// Holds reports whether the inequality holds.
func (b Bound) Holds() bool { return b.Value <= b.Limit }

// String writes the inequality in milliseconds.
func (b Bound) String() string {
	return fmt.Sprintf("%s: %.3f ms ≤ %.3f ms", b.Name, float64(b.Value)/1e6, float64(b.Limit)/1e6)
}

// Check gives the bounds of the theorems for run res of cfg: Theorem 2 for
// the kernel when its priority has a share, Theorem 3 for every interactive
// thread when the top priority has one.
func Check(cfg Config, res *Result) []Bound {
	p := cfg.Params
	if p == (Params{}) {
		p = DefaultParams()
	}
	total := cfg.Criterion[High] + cfg.Criterion[Medium] + cfg.Criterion[Low]
	procs := int64(cfg.Procs)
	slack := p.Interrupt + res.Gap
	var out []Bound
	if f := cfg.Criterion[Low] / total; f > 0 {
		k := cfg.Kernel
		spread := int64((math.Log2(float64(procs)) + math.Log(float64(procs))) * float64(p.DealInterval))
		w, s := res.CPU[Low]+res.Detached[Low], k.Span+k.Forks*(p.Interrupt+res.Gap+p.DealInterval)+k.Barriers*spread
		out = append(out, Bound{
			Name:  "Theorem 2 (stretch): kernel time",
			Value: res.Time,
			Limit: int64(float64(w+s*(procs-1))/float64(procs)/f) + 2*p.Quantum + slack,
		})
	}
	if f := cfg.Criterion[High] / total; f > 0 {
		arrivals := res.Arrivals // sorted: threads arrive in order
		for i, r := range res.Responses {
			a := arrivals[i]
			// Interactive work competing with a: the threads that arrived
			// before a ended and after a (a's own included); earlier ones
			// count too when they had not ended when a arrived.
			n := slices.IndexFunc(arrivals[i:], func(t int64) bool { return t > a+r })
			if n < 0 {
				n = len(arrivals) - i
			}
			for j := i - 1; j >= 0 && arrivals[j]+res.Responses[j] > a; j-- {
				n++
			}
			wa := int64(n) * cfg.EchoWork
			out = append(out, Bound{
				Name:  fmt.Sprintf("Theorem 3 (response): interactive thread %d", i),
				Value: r,
				Limit: int64(float64(wa/procs+cfg.EchoWork)/f) + p.Quantum + slack,
			})
		}
		// A thread that had not ended waited at least this long; alone it
		// competes with nothing later than itself.
		for i, a := range res.Pending {
			out = append(out, Bound{
				Name:  fmt.Sprintf("Theorem 3 (response): interactive thread %d, unfinished", len(arrivals)+i),
				Value: res.Time + cfg.Lead - a,
				Limit: int64(float64(int64(len(res.Pending)-i)*cfg.EchoWork/procs+cfg.EchoWork)/f) + p.Quantum + slack,
			})
		}
	}
	return out
}

// Violations gives the bounds of Check that do not hold.
func Violations(cfg Config, res *Result) []Bound {
	return slices.DeleteFunc(Check(cfg, res), Bound.Holds)
}
