package harness

import (
	"fmt"
	goruntime "runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
)

// The prompt experiment's controls: the same echo and the same load without
// fairly, in the same run, once for each load and processor count (they
// have no criterion). They answer two questions a fairly cell raises:
// whether fairly is ever worse than the program a Go programmer would have
// written without it (plain), and, where a cell misses 1 ms, whether plain
// Go could do better at all on this machine beside that load (floor).
//
//   - plain: GOMAXPROCS = P; the echo a goroutine per connection
//     (interactive.ServeNetGoroutines); a kernel repeats its plain-goroutine
//     version (a go statement and a sync.WaitGroup at every fork, as Table
//     5's plain row); alloc is P goroutines cloning and hashing; batch is P
//     goroutines repeating sequential fib, as the plain twin of
//     bench/cmd/hogserver runs it; batch+1go and batch+2go add their
//     ordinary goroutines, as in the fairly cells.
//   - floor: plain Go tuned by hand, as the stall experiment's tuned row
//     and hogserver's floor: the load's goroutines each locked to an OS
//     thread demoted to SCHED_IDLE, and GOMAXPROCS = one P for each
//     goroutine that computes, plus floorSpareProcs left for the echo and
//     the network poller. A kernel cannot fork onto demoted threads (a go statement
//     takes any thread), so its floor runs P demoted goroutines each
//     repeating the kernel's sequential version on an input of its own:
//     the same code and the same processor demand, with P inputs alive
//     instead of one. The ordinary goroutines of batch+1go and batch+2go
//     stay as the program wrote them, on threads of the normal class: they
//     are outside anyone's control, which is the case the floor shows plain
//     Go's best beside. Linux only (SCHED_IDLE).
//   - floor-alloc, for a kernel: the floor, with one more demoted goroutine
//     that allocates garbage until the process allocates as fast as the
//     fastest fairly cell of that kernel and P did, as far as its demoted
//     thread gets a core (allocTopUp). A
//     kernel's fairly version forks with thread.Spawn, whose closure is
//     allocated at every fork, where the floor's sequential version
//     allocates nothing: beside fib, Go then collects a hundred times a
//     second and more in fairly's cells and never in the floor's. This
//     floor meets the same collector, so that a cell's miss can be told
//     apart from what Go's collector costs any program that allocates as
//     fast on this machine.

// kindPromptControl is the kind of the controls' records.
const kindPromptControl = "prompt_control"

// The controls, by the name their records carry.
const (
	controlPlain      = "plain"
	controlFloor      = "floor"
	controlFloorAlloc = "floor-alloc"
)

// floorSpareProcs are the Ps the floor leaves free beside one for each
// goroutine that computes. One is not enough beside goroutines that Go
// preempts, as we read it (no trace confirms it): each preemption puts the goroutine on the global run queue
// and wakes an idle P to take it, and a P that picks a locked goroutine
// waits with it for its demoted thread to get a core. The one idle P is
// then often taken when the network poller returns with the echo's
// goroutines, which wait on the global run queue for the next scheduling
// point, up to Go's 10 ms preemption. Four spare Ps gave a lower floor
// than one beside batch+2go (docs/results.md at 7116a69^, "The prompt
// experiment's controls"); idle Ps cost nothing.
const floorSpareProcs = 4

// promptPlainSteps are the plain controls' steps, marked as baselines so
// that they run after every fairly step (plan), the plain runs of kernels
// that start a goroutine at every call (fib, uts) last of all: Go keeps
// the record of every goroutine it ever had at once, and every later
// collection in the process walks them all, so the runs after them would
// be measured in a heavier process (plan, on the baselines). The floors
// start no more goroutines than the fairly cells and run beside them
// (promptSteps).
func (s *suite) promptPlainSteps() []step {
	if s.cfg.PromptNoControls {
		return nil
	}
	type control struct {
		load string
		k    *kernels.Kernel // nil for a load of PromptLoads
	}
	var coarse, fine []control
	for _, k := range s.cfg.Kernels {
		if k.GoroutinesFine {
			fine = append(fine, control{k.Name, &k})
		} else {
			coarse = append(coarse, control{k.Name, &k})
		}
	}
	for _, l := range s.cfg.PromptLoads {
		coarse = append(coarse, control{load: l})
	}
	var steps []step
	for _, c := range slices.Concat(coarse, fine) {
		for _, p := range s.cfg.Procs {
			steps = append(steps, step{name: fmt.Sprintf("prompt %s %s P=%d", c.load, controlPlain, p), baseline: true,
				run: func() (*Record, error) { return s.promptControl(c.load, c.k, p, controlPlain) }})
		}
	}
	return steps
}

// promptControl runs control beside load at procs: k is the load's kernel,
// nil for a load of PromptLoads. It measures as a fairly cell does: the
// requests sent while the load computed and the harness waited, at least
// the cell's count.
func (s *suite) promptControl(load string, k *kernels.Kernel, procs int, control string) (*Record, error) {
	rec := &Record{Kind: kindPromptControl, Kernel: load, Procs: procs}
	floor := control == controlFloor || control == controlFloorAlloc
	var stop atomic.Bool
	// work are the load's goroutines, each looping until stop; on the
	// floor, the first demoted of them run on demoted OS threads.
	var work []func() error
	var demoted int
	var done batchWork // what a batch load gets done
	switch {
	case k != nil:
		rec.Size = s.cfg.PromptSize(*k)
		insts := []kernels.Instance{s.promptInstance(*k)}
		if floor {
			for len(insts) < procs { // made before the echo starts, dropped after the cell
				insts = append(insts, k.New(rec.Size))
			}
		}
		for _, inst := range insts {
			run := inst.Goroutines
			if floor {
				run = inst.Seq
			}
			work = append(work, func() error {
				// At least one pass, so that the check has a result (see
				// promptLoad).
				for done := false; !done; {
					run()
					done = stop.Load()
				}
				return inst.Check()
			})
		}
		if control == controlFloorAlloc {
			rate := s.prompt.allocRate[loadAt{load, procs}]
			work = append(work, func() error { allocTopUp(&stop, rate); return nil })
		}
		demoted = len(work)
	case load == "alloc":
		in := promptAllocInput()
		for range procs {
			work = append(work, func() error { allocLoop(&stop, in); return nil })
		}
		demoted = procs
	default: // batch, batch+1go, batch+2go
		rec.Size = s.cfg.promptBatchFib()
		for range procs {
			work = append(work, func() error {
				for !stop.Load() {
					kernels.FibSeq(rec.Size)
					done.fibs.Add(1)
				}
				return nil
			})
		}
		demoted = procs
		for range promptGoroutines(load) {
			work = append(work, func() error { hashLoop(&stop, &done.hashed); return nil })
		}
	}
	var fibs, mib float64
	goProcs := procs
	if floor {
		goProcs = len(work) + floorSpareProcs
	}
	_, err := withProcs(goProcs, func() (struct{}, error) {
		echo, err := s.cfg.startNetEchoConns(interactive.ServeNetGoroutines, s.cfg.promptScript(), promptConns)
		if err != nil {
			return struct{}{}, err
		}
		gc := startCollector()
		from := echo.srv.Echoed()
		errs := make([]error, len(work))
		var wg sync.WaitGroup
		for i, w := range work {
			wg.Go(func() {
				if floor && i < demoted {
					// Locked for good: the goroutine ends locked, and Go
					// ends its demoted thread with it.
					goruntime.LockOSThread()
					idleThread()
				}
				errs[i] = w()
			})
		}
		fibs, mib = done.measure(rec, func() { s.cfg.waitEnough(echo.srv, from) })
		stop.Store(true)
		wg.Wait()
		rec.Collector = gc.stop()
		return struct{}{}, closeAll(append(errs, closeEcho(nil, echo, rec))...)
	})
	s.promptSummary(rec)
	rec.PromptSummary.Control = control
	rec.PromptSummary.BatchRate, rec.PromptSummary.HashRate = fibs, mib
	return rec, err
}

// topUpObject is what allocTopUp allocates: 24 bytes without pointers,
// the size of the closure that fib's fairly version allocates at every
// fork.
type topUpObject [3]uintptr

// topUpSink holds allocTopUp's latest object, so that each escapes to the
// heap and is garbage at the next.
var topUpSink atomic.Pointer[topUpObject]

// topUpChunk is how many bytes allocTopUp allocates between two readings
// of the process's allocations.
const topUpChunk = 64 << 10

// allocTopUp allocates garbage until stop, so that the whole process
// allocates rate bytes a second from its call, as far as its thread gets a
// core: it reads what the process allocated (runtime/metrics, which stops
// nothing) and allocates what is owed, a chunk at a time, in objects of a
// fork's closure's size. While nothing is owed it only reads the clock: it
// runs on a demoted thread of the floor, and a goroutine locked to its
// thread that parked or yielded would hand its P off at each wake-up.
func allocTopUp(stop *atomic.Bool, rate float64) {
	s := []metrics.Sample{{Name: metricAllocs}}
	if metrics.Read(s); s[0].Value.Kind() != metrics.KindUint64 || rate <= 0 {
		return // not in this Go, or nothing to match: the floor without the top-up
	}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	from, start := read(), time.Now()
	size := float64(unsafe.Sizeof(topUpObject{}))
	for !stop.Load() {
		owed := rate*time.Since(start).Seconds() - float64(read()-from)
		if owed <= 0 {
			// Ahead: nothing is owed before the rate catches up with what
			// the process allocated, so only the clock is read till then.
			due := time.Now().Add(time.Duration(-owed / rate * float64(time.Second)))
			for time.Now().Before(due) && !stop.Load() {
			}
			continue
		}
		for n := min(owed, topUpChunk); n > 0; n -= size {
			topUpSink.Store(new(topUpObject))
		}
	}
}

// promptControlOf finds the control's record at load and procs, or nil.
func promptControlOf(res *Results, load string, procs int, control string) *PromptSummary {
	for _, rec := range res.Records {
		if sum := rec.PromptSummary; rec.Kind == kindPromptControl && sum != nil && rec.Kernel == load && rec.Procs == procs && sum.Control == control {
			return sum
		}
	}
	return nil
}

// promptGoalMs is the experiment's goal for the echo's p99, in ms.
const promptGoalMs = 1.0

// promptVerdict judges a fairly cell's p99 against the controls of its load
// and P in the same run (nil where a control did not run). The rule: the
// p99 is at most max(1 ms, the floor's p99), since no program does better
// than the floor beside that load on this machine, and at most the plain
// control's p99, since fairly must never be worse than going without it.
// It returns whether the cell passes and the reasons it fails.
func promptVerdict(p99 float64, plain, floor *PromptSummary) (bool, []string) {
	var why []string
	if p99 > promptBound(floor) {
		why = append(why, "bound")
	}
	if plain != nil && plain.Requests > 0 && p99 > plain.P99 {
		why = append(why, "plain")
	}
	return len(why) == 0, why
}

// promptBound is the most a cell's p99 may be beside the floor of its load
// and P (nil, or without requests, where none ran): max(1 ms, its p99).
func promptBound(floor *PromptSummary) float64 {
	if floor != nil && floor.Requests > 0 {
		return max(promptGoalMs, floor.P99)
	}
	return promptGoalMs
}

// promptVersusTable sets each fairly cell beside the controls of its load
// and P: one row per load and P, the controls' p99 and each criterion's
// p99 with its verdict (promptVerdict). It is nil when no control ran.
func promptVersusTable(res *Results) *Section {
	if !slices.ContainsFunc(res.Records, func(r *Record) bool { return r.Kind == kindPromptControl }) {
		return nil
	}
	var rows []loadAt
	var crits []string
	for _, rec := range res.Records {
		if rec.Kind != kindPrompt {
			continue
		}
		if r := (loadAt{rec.Kernel, rec.Procs}); !slices.Contains(rows, r) {
			rows = append(rows, r)
		}
		if !slices.Contains(crits, rec.Criterion) {
			crits = append(crits, rec.Criterion)
		}
	}
	slices.SortStableFunc(rows, func(a, b loadAt) int { return a.procs - b.procs })
	t := table{head: []string{"load", "P", "plain p99 (ms)", "floor p99 (ms)", "bound (ms)"}}
	for _, c := range crits {
		t.head = append(t.head, c+" p99 (ms)")
	}
	t.head = append(t.head, "cells passed")
	var cells, passed, worse int
	for _, r := range rows {
		plain, floor := promptControlOf(res, r.load, r.procs, controlPlain), promptControlOf(res, r.load, r.procs, controlFloor)
		ctl := func(s *PromptSummary) string {
			if s == nil || s.Requests == 0 {
				return "—"
			}
			return fmt.Sprintf("%s (%d)", msOf(s.P99), s.Requests)
		}
		line := []string{r.load, fmt.Sprint(r.procs), ctl(plain), ctl(floor), msOf(promptBound(floor))}
		rowCells, rowPassed := 0, 0
		for _, c := range crits {
			rec := res.find(Record{Kind: kindPrompt, Kernel: r.load, Procs: r.procs, Criterion: c})
			if rec == nil || rec.PromptSummary == nil || rec.PromptSummary.Requests == 0 {
				line = append(line, "—")
				continue
			}
			p99 := rec.PromptSummary.P99
			ok, why := promptVerdict(p99, plain, floor)
			rowCells++
			mark := "✓"
			if ok {
				rowPassed++
			} else {
				mark = "✗ > " + strings.Join(why, ", ")
			}
			if slices.Contains(why, "plain") {
				worse++
			}
			line = append(line, msOf(p99)+" "+mark)
		}
		cells += rowCells
		passed += rowPassed
		t.add(append(line, fmt.Sprintf("%d/%d", rowPassed, rowCells))...)
	}
	return &Section{
		Title: "Prompt: fairly beside plain Go",
		Text: fmt.Sprintf("Each fairly cell of the table above beside two controls of the same run at the same load and P, with their requests in brackets: "+
			"plain, the echo a goroutine per connection and the load on ordinary goroutines at GOMAXPROCS = P (a kernel forks with go and a WaitGroup; "+
			"alloc is P goroutines cloning and hashing; batch is P goroutines repeating sequential fib; the ordinary goroutines of batch+1go and batch+2go as in the cells); "+
			"floor, plain Go tuned by hand: the load's goroutines locked to OS threads demoted to SCHED_IDLE (a kernel: P of them, each repeating its sequential version on its own input) "+
			"and GOMAXPROCS %d above the goroutines that compute, Ps left for the echo; the ordinary goroutines of batch+1go and batch+2go stay on normal threads, outside anyone's control. "+
			"A cell passes (✓) when its p99 is at most the bound, max(1 ms, floor p99), and at most the plain p99; "+
			"✗ names what it exceeds. %d of %d cells pass; %d are worse than plain.", floorSpareProcs, passed, cells, worse),
		Table: t.String(),
	}
}

// promptFairlyPartMs is the goal for fairly's part of the echo's p99, in ms.
const promptFairlyPartMs = 0.2

// promptGoalTable counts the cells that meet each part of the experiment's
// goal (p99 ≤ 1 ms, p99 ≤ 2× the idle echo's p99 at the same P, fairly's
// part ≤ 0.2 ms), for fairly's cells and for the floors', in one run. The
// floors are plain Go tuned by hand beside the same loads (floor-alloc also
// allocating as fast as fairly did): where they miss the goal, the machine
// and Go set the limit there, not the scheduler. The last column names
// fairly's misses beyond that limit: at a load and P where a floor met the
// goal (any: the floors of one load are noisy, and the stricter count is
// the one to trust). It is nil when no floor ran.
func promptGoalTable(res *Results) *Section {
	idle := map[int]float64{}
	for _, rec := range res.Records {
		if rec.Kind == kindPromptIdle && rec.PromptSummary != nil {
			idle[rec.Procs] = rec.PromptSummary.P99
		}
	}
	type tally struct {
		cells, fast, near, part, whole int
		misses, beyond                 []string
	}
	floors := map[string]*tally{controlFloor: {}, controlFloorAlloc: {}}
	var fairly tally
	// floorMet says, for a load and P, whether a floor met the whole goal
	// there.
	floorMet := map[loadAt]bool{}
	count := func(t *tally, rec *Record) bool {
		sum := rec.PromptSummary
		fast := sum.P99 <= promptGoalMs
		near := idle[rec.Procs] > 0 && sum.P99 <= 2*idle[rec.Procs]
		part := sum.FairlyP99 <= promptFairlyPartMs // 0 in a control: no fairly
		t.cells++
		t.fast += b2i(fast)
		t.near += b2i(near)
		t.part += b2i(part)
		if fast && near && part {
			t.whole++
			return true
		}
		cell := fmt.Sprintf("%s P=%d", rec.Kernel, rec.Procs)
		if rec.Kind == kindPrompt {
			cell += " " + rec.Criterion
		}
		t.misses = append(t.misses, cell+" "+msOf(sum.P99))
		return false
	}
	measured := func(rec *Record) bool { return rec.PromptSummary != nil && rec.PromptSummary.Requests > 0 }
	for _, rec := range res.Records {
		if rec.Kind != kindPromptControl || !measured(rec) {
			continue
		}
		if t := floors[rec.PromptSummary.Control]; t != nil && count(t, rec) {
			floorMet[loadAt{rec.Kernel, rec.Procs}] = true
		}
	}
	if floors[controlFloor].cells+floors[controlFloorAlloc].cells == 0 {
		return nil
	}
	for _, rec := range res.Records {
		if rec.Kind == kindPrompt && measured(rec) && !count(&fairly, rec) && floorMet[loadAt{rec.Kernel, rec.Procs}] {
			fairly.beyond = append(fairly.beyond, fairly.misses[len(fairly.misses)-1])
		}
	}
	t := table{head: []string{"echo", "cells", "p99 ≤ 1 ms", "p99 ≤ 2× idle", "fairly's part ≤ 0.2 ms", "whole goal", "cells that miss it (p99, ms)",
		"misses where a floor met it"}}
	row := func(name string, x tally, part, beyond string) {
		t.add(name, fmt.Sprint(x.cells), fmt.Sprint(x.fast), fmt.Sprint(x.near), part, fmt.Sprint(x.whole), strings.Join(x.misses, "; "), beyond)
	}
	beyond := fmt.Sprint(len(fairly.beyond))
	if len(fairly.beyond) > 0 {
		beyond += ": " + strings.Join(fairly.beyond, "; ")
	}
	row("fairly", fairly, fmt.Sprint(fairly.part), beyond)
	for _, ctl := range []string{controlFloor, controlFloorAlloc} {
		if x := floors[ctl]; x.cells > 0 {
			row(ctl+" Go", *x, "—", "—")
		}
	}
	return &Section{
		Title: "Prompt: the goal, fairly and the floor",
		Text: "How many cells meet each part of the goal in this run: p99 ≤ 1 ms, p99 ≤ 2× the idle echo's p99 at the same P, fairly's part ≤ 0.2 ms, and all at once (whole goal). " +
			"The floors' cells (plain Go tuned by hand, one per load and P; floor-alloc, for a kernel, allocating as fast as its fastest fairly cell did, so that Go collects as often) show what Go on this machine reaches beside the same loads: " +
			"a cell of a floor that misses the goal is a limit of the machine and of Go, not of a scheduler. " +
			"The last column names fairly's misses beyond that limit: at a load and P where a floor met the goal.",
		Table: t.String(),
	}
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
