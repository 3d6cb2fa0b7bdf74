package sim

// Profiles of simulated runs, printed on request: how finding 6 of
// docs/simulation.md was measured.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fairlyprompt/fairly/internal/policy"
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
	name, p, k := profiled(t)
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
	cfg, res := runProfiled(t, k, p)
	ph[cur].end = res.Time + cfg.Lead
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

// TestRampProfile profiles a phased kernel's run alone (bfs, sort) barrier
// by barrier: for each phase of its root, how long it took against its
// bound max(W/P, S), how long after it began half and then all the workers
// computed, the workers' idle time before all computed (the ramp) and
// after (the tail), and the deals, requests and promotions it saw.
// SIM_PROFILE=bfs/128 go test -run TestRampProfile -v.
func TestRampProfile(t *testing.T) {
	name, p, k := profiled(t)
	ps, ok := k.Root.Shape.(phases)
	if !ok {
		t.Skipf("%s has no phases", name)
	}
	type acc struct {
		start, end, half, full  int64
		rampIdle, tailIdle      float64 // worker-ns without a thread
		rampAsleep              float64
		st0, st1                stats
		rampPromo, rampSleepers int
	}
	ph := make([]acc, len(ps))
	for i := range ph {
		ph[i].start, ph[i].half, ph[i].full = -1, -1, -1
	}
	sum := func(s *sim) (st stats) {
		for _, w := range s.workers {
			x := w.stats
			st.deals += x.deals
			st.requests += x.requests
			st.promotions += x.promotions
			st.served += x.served
			st.dropped += x.dropped
		}
		return st
	}
	cur := -1
	var prevT int64
	var prevBusy, prevAsleep int
	var last *sim
	seriesPhase, nextSample := -1, int64(0)
	if v := os.Getenv("SIM_RAMP_SERIES"); v != "" {
		seriesPhase, _ = strconv.Atoi(v)
	}
	afterEvent = func(s *sim, e event) {
		last = s
		if cur >= 0 {
			a := &ph[cur]
			dt := float64(e.t - prevT)
			idle := float64(p-prevBusy) * dt
			if a.full < 0 {
				a.rampIdle += idle
				a.rampAsleep += float64(prevAsleep) * dt
			} else {
				a.tailIdle += idle
			}
		}
		prevT = e.t
		busy, asleep := 0, 0
		phase := cur
		for _, w := range s.workers {
			switch {
			case w.asleep:
				asleep++
			case w.g != nil:
				if w.cur == s.rank[Low] {
					busy++
				}
				if f := &w.g.frames[0]; f.t == s.kernel {
					if _, ok := f.node.Shape.(phases); ok {
						phase = int(f.node.A)
					}
				}
			}
		}
		if phase != cur {
			st := sum(s)
			if cur >= 0 {
				ph[cur].end, ph[cur].st1 = e.t, st
			}
			cur = phase
			ph[cur].start, ph[cur].st0 = e.t, st
			ph[cur].rampSleepers = asleep
		}
		if cur >= 0 && cur == seriesPhase && e.t >= nextSample && e.t-ph[cur].start < 5e6 {
			nextSample = e.t + 50e3
			fmt.Printf("  +%.3f ms busy %d asleep %d\n", float64(e.t-ph[cur].start)/1e6, busy, asleep)
		}
		if cur >= 0 {
			a := &ph[cur]
			if a.half < 0 && busy >= p/2 {
				a.half = e.t
			}
			if a.full < 0 && busy == p {
				a.full = e.t
				a.rampPromo = sum(s).promotions - a.st0.promotions
			}
		}
		prevBusy, prevAsleep = busy, asleep
	}
	defer func() { afterEvent = nil }()
	cfg, res := runProfiled(t, k, p)
	ph[cur].end = res.Time + cfg.Lead
	ph[cur].st1 = sum(last)
	var total, bound, ramp, tail float64
	c := DefaultCosts()
	fmt.Printf("%s P=%d time=%.2fms phase bound %.2fms deals=%d requests=%d promotions=%d\n", name, p, float64(res.Time)/1e6, float64(k.BoundTime(p, c))/1e6, res.Deals, res.Requests, res.Promotions)
	fmt.Println(" phase | start | took (ms) | bound (ms) | half at | all at | ramp idle (ms/P) | of it asleep | tail idle (ms/P) | deals | requests served/dropped | promotions (before all)")
	for i, a := range ph {
		m := workSpan(ps[i], c)
		b := float64(max(m.work/int64(p), m.span))
		d := float64(a.end - a.start)
		total += d
		bound += b
		ramp += a.rampIdle / float64(p)
		tail += a.tailIdle / float64(p)
		rel := func(x int64) string {
			if x < 0 {
				return "never"
			}
			return fmt.Sprintf("+%.3f", float64(x-a.start)/1e6)
		}
		fmt.Printf(" %d | %.3f | %.3f | %.3f | %s | %s | %.3f | %.0f%% | %.3f | %d | %d/%d | %d (%d)\n", i, float64(a.start)/1e6, d/1e6, b/1e6, rel(a.half), rel(a.full),
			a.rampIdle/float64(p)/1e6, 100*a.rampAsleep/max(1, a.rampIdle), a.tailIdle/float64(p)/1e6,
			a.st1.deals-a.st0.deals, a.st1.served-a.st0.served, a.st1.dropped-a.st0.dropped, a.st1.promotions-a.st0.promotions, a.rampPromo)
	}
	fmt.Printf(" sum: took %.2f ms, bound %.2f, idle in ramps %.2f ms, in tails %.2f ms (per worker)\n", total/1e6, bound/1e6, ramp/1e6, tail/1e6)
}

// TestLoadedSeries prints, every SIM_SERIES_STEP µs (250), the round's
// primary rank, how many workers run the kernel, the sink, or sleep, and
// the kernel's threads in banks and on lazy stacks, in a loaded run:
// SIM_PROFILE=sort/128 SIM_PROFILE_CRITERION=50-0-50 go test -run TestLoadedSeries -v.
func TestLoadedSeries(t *testing.T) {
	name, procsS, ok := strings.Cut(os.Getenv("SIM_PROFILE"), "/")
	crit := os.Getenv("SIM_PROFILE_CRITERION")
	if !ok || crit == "" {
		t.Skip("set SIM_PROFILE=kernel/P and SIM_PROFILE_CRITERION to profile")
	}
	p, err := strconv.Atoi(procsS)
	if err != nil {
		t.Fatal(err)
	}
	var c [3]float64
	if _, err := fmt.Sscanf(crit, "%v-%v-%v", &c[0], &c[1], &c[2]); err != nil {
		t.Fatal(err)
	}
	step := int64(250e3)
	if v := os.Getenv("SIM_SERIES_STEP"); v != "" {
		us, _ := strconv.Atoi(v)
		step = int64(us) * 1000
	}
	k := kernel(t, name, p, 50e6)
	cfg := loaded(k, p, c, 2019)
	var next, prevT int64
	var prevKern, prevSink int
	prevPrimLow := false
	var inLow, kernLow, kernHigh, sinkLow float64
	var ri, rk, rs float64
	var roundEnd int64
	phaseNow := func(s *sim) int {
		for _, w := range s.workers {
			if w.g != nil && w.g.frames[0].t == s.kernel {
				return int(w.g.frames[0].node.A)
			}
		}
		return -1
	}
	afterEvent = func(s *sim, e event) {
		dt := float64(e.t - prevT)
		if prevPrimLow {
			inLow += dt * float64(p)
			kernLow += dt * float64(prevKern)
			sinkLow += dt * float64(prevSink)
		} else {
			kernHigh += dt * float64(prevKern)
		}
		prevT = e.t
		prevKern, prevSink = 0, 0
		for _, w := range s.workers {
			if !w.asleep && w.g != nil && w.cur == s.rank[Low] {
				prevKern++
			}
			if !w.asleep && w.g != nil && w.cur == s.rank[Medium] {
				prevSink++
			}
		}
		primLow := s.workers[0].primary == s.rank[Low]
		if primLow != prevPrimLow || primLow && e.t >= roundEnd {
			if prevPrimLow && os.Getenv("SIM_SERIES_ROUNDS") != "" {
				fmt.Printf("  round to %.2f ms: kernel %.1f%% sink %.1f%% (phase %d)\n", float64(e.t)/1e6, 100*(kernLow-rk)/(inLow-ri), 100*(sinkLow-rs)/(inLow-ri), phaseNow(s))
			}
			ri, rk, rs = inLow, kernLow, sinkLow
			roundEnd = policy.RoundEnd(e.t, s.p.Quantum)
		}
		prevPrimLow = primLow
		if e.t < next || os.Getenv("SIM_SERIES_QUIET") != "" {
			return
		}
		next = e.t + step
		var kern, sink, asleep, loop, banked, lazy, sinkBanked, holders int
		lo, mid := s.rank[Low], s.rank[Medium]
		for _, w := range s.workers {
			switch {
			case w.asleep:
				asleep++
			case w.g == nil:
				loop++
			case w.cur == lo:
				kern++
			case w.cur == mid:
				sink++
			}
			n := 0
			w.banks[lo].Prune(isLive)
			n += w.banks[lo].Len()
			banked += n
			sinkBanked += w.banks[mid].Len()
			if w.g != nil {
				for _, x := range w.g.lazy {
					if x != nil && x.state == stNew && x.rank == lo {
						lazy++
						n++
					}
				}
			}
			if n > 0 {
				holders++
			}
		}
		fmt.Printf("  t=%.2fms primary %d kernel %d sink %d asleep %d loop %d | kernel banked %d lazy %d holders %d | sink banked %d\n",
			float64(e.t)/1e6, s.workers[0].primary, kern, sink, asleep, loop, banked, lazy, holders, sinkBanked)
	}
	defer func() { afterEvent = nil }()
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s P=%d %s time=%.2fms; in the kernel's rounds %.1f ms (per worker): the kernel ran %.1f%%, the sink %.1f%%; the kernel ran %.1f ms (per worker) in other rounds\n", name, p, crit, float64(res.Time)/1e6,
		inLow/float64(p)/1e6, 100*kernLow/inLow, 100*sinkLow/inLow, kernHigh/float64(p)/1e6)
}

// runProfiled runs kernel k on p workers for a profile: alone, or loaded
// under the criterion SIM_PROFILE_CRITERION names (as fairbench: 50-0-50).
func runProfiled(t *testing.T, k *Kernel, p int) (Config, *Result) {
	t.Helper()
	cfg := Config{Procs: p, Criterion: [3]float64{0, 0, 100}, Kernel: k, Seed: 2019}
	if c := os.Getenv("SIM_PROFILE_CRITERION"); c != "" {
		var crit [3]float64
		if _, err := fmt.Sscanf(c, "%v-%v-%v", &crit[0], &crit[1], &crit[2]); err != nil {
			t.Fatal(err)
		}
		cfg = loaded(k, p, crit, 2019)
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, res
}

// profiled is the kernel and worker count SIM_PROFILE=kernel/P names; it
// skips the test when the variable is not set.
func profiled(t *testing.T) (string, int, *Kernel) {
	t.Helper()
	name, procsS, ok := strings.Cut(os.Getenv("SIM_PROFILE"), "/")
	if !ok {
		t.Skip("set SIM_PROFILE=kernel/P to profile")
	}
	p, err := strconv.Atoi(procsS)
	if err != nil {
		t.Fatal(err)
	}
	return name, p, kernel(t, name, p, 50e6)
}
