package sim

// Profiles of simulated runs, printed on request: how finding 6 of
// docs/simulation.md was measured.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func sortPhaseOf(n Node, k *Kernel) int {
	ps := k.Root.Shape.(phases)
	switch n.Shape.(type) {
	case work:
		if n.A == ps[0].A {
			return 0
		}
		return 2
	case loop:
		switch n.ID {
		case ps[1].ID:
			return 1
		case ps[3].ID:
			return 3
		}
		return 4
	}
	return -1
}

// TestPhaseProfile profiles a kernel's run alone phase by phase: when each
// phase starts and ends, how soon every worker computes, where the
// processor time goes, and each worker's busy time per phase; with
// SIM_PROFILE_SERIES also the unstarted threads every 0.5 ms, lazy or in
// banks. SIM_PROFILE=sort/128 go test -run TestPhaseProfile -v.
func TestPhaseProfile(t *testing.T) {
	name, procsS, ok := strings.Cut(os.Getenv("SIM_PROFILE"), "/")
	if !ok {
		t.Skip("set SIM_PROFILE=kernel/P to profile")
	}
	p, perr := strconv.Atoi(procsS)
	if perr != nil {
		t.Fatal(perr)
	}
	k := kernel(t, name, p, 50e6)
	nph := 5 // sort's; other kernels are profiled as one phase

	type acc struct {
		start, end              int64
		asleep, loop, busy, oth float64
		perW                    []int64
		full                    int64 // first time all busy
	}
	ph := make([]acc, nph)
	for i := range ph {
		ph[i].perW = make([]int64, p)
		ph[i].start = -1
		ph[i].full = -1
	}
	cur := 0
	var nextSample int64
	var prevT int64
	type wst struct {
		state uint8
		phase int
	}
	prev := make([]wst, p)
	phaseOf := func(n Node) int {
		if name == "sort" {
			return sortPhaseOf(n, k)
		}
		return 0
	}
	afterEvent = func(s *sim, e event) {
		dt := float64(e.t - prevT)
		a := &ph[cur]
		for i, st := range prev {
			switch st.state {
			case 0:
				a.asleep += dt
			case 1:
				a.loop += dt
			case 2:
				a.busy += dt
				if st.phase >= 0 {
					ph[st.phase].perW[i] += e.t - prevT
				}
			}
		}
		prevT = e.t
		nbusy := 0
		for i, w := range s.workers {
			st := wst{phase: -1}
			switch {
			case w.asleep:
				st.state = 0
			case w.g == nil:
				st.state = 1
			default:
				st.state = 2
				nbusy++
				f := w.g.frames[len(w.g.frames)-1]
				st.phase = phaseOf(f.node)
				if st.phase > cur {
					ph[cur].end = e.t
					cur = st.phase
					ph[cur].start = e.t
				}
			}
			prev[i] = st
		}
		if os.Getenv("SIM_PROFILE_SERIES") != "" && e.t >= nextSample {
			nextSample += 500e3
			var lazyN, lazyNp, bankN, holders int
			for _, w := range s.workers {
				h := false
				if w.g != nil {
					for i, x := range w.g.lazy {
						if x != nil && x.state == stNew {
							if i >= w.g.bot {
								lazyNp++
							} else {
								lazyN++
							}
							h = true
						}
					}
				}
				for r := range w.banks {
					if w.banks[r].Any(isLive) {
						bankN += w.banks[r].Len()
						h = true
					}
				}
				if h {
					holders++
				}
			}
			fmt.Printf("  t=%.1fms phase %d busy %d  lazy(unpromotable) %d lazy(promotable) %d bank %d holders %d\n", float64(e.t)/1e6, cur, nbusy, lazyN, lazyNp, bankN, holders)
		}
		if nbusy == p && ph[cur].full < 0 {
			ph[cur].full = e.t
		}
	}
	defer func() { afterEvent = nil }()
	res, err := Run(Config{Procs: p, Criterion: [3]float64{0, 0, 100}, Kernel: k, Seed: 2019})
	if err != nil {
		t.Fatal(err)
	}
	ph[cur].end = res.Time
	fmt.Printf("%s P=%d time=%.2fms speedup=%.1f idle=%.3f deals=%d requests=%d promotions=%d preempt=%d\n", name, p, float64(res.Time)/1e6, float64(k.Work)/float64(res.Time), res.Idle, res.Deals, res.Requests, res.Promotions, res.Preemptions)
	for i, a := range ph {
		var mx, mn int64 = 0, 1 << 62
		var hist strings.Builder
		for _, x := range a.perW {
			mx, mn = max(mx, x), min(mn, x)
		}
		if i == 1 || i == 3 {
			cnt := map[int64]int{}
			for _, x := range a.perW {
				cnt[(x+k.Span/100)/(1e6)]++
			}
			fmt.Fprint(&hist, cnt)
		}
		d := float64(a.end - a.start)
		fmt.Printf(" phase %d: %.3f..%.3f ms (%.3f ms) full at +%.3f; asleep %.1f%% loop %.1f%% busy %.1f%%; per-worker busy max %.2f min %.2f ms %s\n", i, float64(a.start)/1e6, float64(a.end)/1e6, d/1e6, float64(a.full-a.start)/1e6,
			100*a.asleep/d/float64(p), 100*a.loop/d/float64(p), 100*a.busy/d/float64(p), float64(mx)/1e6, float64(mn)/1e6, hist.String())
	}
}
