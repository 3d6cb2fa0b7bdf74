package thread_test

// A property test of the whole thread API: random programs of Spawn, Join,
// Go, Wait, Run, RunContext, Await, AwaitContext, Sleep, Yield, Fork2, For,
// Map, panics, Goexit, cancelled contexts and misuses, at Procs 1, 2 and 8,
// each on a runtime of its own that ends with Close. After each program:
//
//   - every thread that was started ran exactly once, and none that was
//     not started ran;
//   - every Join, Wait and Run got its thread's result, or the error the
//     program makes due (a panic, Goexit, a priority inversion, a done
//     context, a misuse);
//   - Close returned, and the program itself finished, within hangBound
//     of the end of the last thread (a hang detector, not a timing goal);
//   - no goroutine is left (goleak).
//
// The test also logs, with their seeds, the programs whose Close returned
// more than slowClose after the end of their last thread, and the slowest
// Close of each Procs: the goal is none, but on a machine that other
// processes keep busy a Close may wait that long for a core, so it does
// not fail the test.
//
// A program is a function of its seed: a failure names the seed, and
//
//	go test ./thread -run TestProperty -seed N
//
// replays that program (at Procs 1, 2 and 8, several times, since the
// schedule differs from run to run). -soak D runs programs for D at each
// Procs instead of the CI's count; -programs N sets how many programs each
// Procs runs.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

var (
	propSeed     = flag.Uint64("seed", 0, "TestProperty: replay the program of this seed (0: random programs)")
	propSoak     = flag.Duration("soak", 0, "TestProperty: run random programs for this long at each Procs")
	propPrograms = flag.Int("programs", 0, "TestProperty: programs per Procs (0: 1500, 100 with -short)")
)

const (
	slowClose = time.Second      // Close after the last thread's end: logged
	hangBound = 20 * time.Second // a program or its Close: a hang
)

// propProcs are the numbers of workers every program runs at.
var propProcs = []int{1, 2, 8}

func TestProperty(t *testing.T) {
	if *propSeed != 0 {
		for _, procs := range propProcs {
			for range 20 {
				if closing, ok := runProgram(t, *propSeed, procs); !ok {
					return
				} else if closing > slowClose {
					t.Logf("Procs %d: Close returned %v after the last thread ended", procs, closing.Round(time.Millisecond))
				}
			}
		}
		return
	}
	n := *propPrograms
	if n == 0 {
		n = 1500
		if testing.Short() {
			n = 100
		}
	}
	base := rand.Uint64()
	for _, procs := range propProcs {
		start, ran, slow := time.Now(), 0, 0
		var slowest time.Duration
		for i := 0; ; i++ {
			if *propSoak > 0 && time.Since(start) >= *propSoak || *propSoak == 0 && i >= n {
				break
			}
			seed := base + uint64(i)*0x9e3779b97f4a7c15 | 1
			closing, ok := runProgram(t, seed, procs)
			if !ok {
				return
			}
			if closing > slowClose {
				slow++
				t.Logf("seed %d at Procs %d: Close returned %v after the last thread ended", seed, procs, closing.Round(time.Millisecond))
			}
			slowest = max(slowest, closing)
			ran++
		}
		t.Logf("Procs %d: %d programs in %v, no failure; slowest Close %v after the last thread's end, %d over %v",
			procs, ran, time.Since(start).Round(time.Millisecond), slowest.Round(time.Microsecond), slow, slowClose)
	}
}

// The operations of a thread's body.
type pop int

const (
	opSpawnJoin   pop = iota // Spawn a child, Join it at once
	opSpawnLater             // Spawn a child, Join it at the end of the body
	opSpawnOrphan            // Spawn a child nobody joins
	opJoinShared             // Join a thread the program started with Go
	opAwaitSleep             // Await a short sleep
	opAwaitWait              // Await Handle.Wait of a shared thread
	opAwaitRun               // Await thread.Run of a child
	opAwaitCtx               // AwaitContext of a sleep that watches its context
	opSleep                  // Sleep
	opYield                  // Yield a few times
	opFork2                  // Fork2 of a small recursion
	opFor                    // For over a small range
	opMap                    // Map over a small slice
	opMisuse                 // Run, RunContext and Close in thread code, Close in Await
	numOps
)

var popNames = [...]string{"spawn+join", "spawn+join later", "spawn orphan", "join shared", "await sleep",
	"await wait", "await run", "await context", "sleep", "yield", "fork2", "for", "map", "misuse"}

// How a thread's body ends.
type pend int

const (
	endReturn pend = iota // returns its id
	endPanic              // panics with its id
	endGoexit             // calls runtime.Goexit
)

// How the program starts a top-level thread.
type pstart int

const (
	startGo         pstart = iota // Go, then Wait
	startGoCtx                    // GoContext, WaitContext, then Wait
	startRun                      // Run
	startRunCtx                   // RunContext
	startRunInAwait               // Run from the Await of a helper thread
)

type pstep struct {
	op    pop
	child *pnode        // spawned, or Run by opAwaitRun
	n     int           // shared index, loop size, recursion depth, yields
	d     time.Duration // sleeps
}

type pnode struct {
	id    int
	prio  int // index into the program's priorities, 0 the highest
	steps []pstep
	end   pend
	// goexits says a Goexit may end the body's goroutine before the body
	// ends: its own, or that of a thread it joins, which may run inline on
	// its goroutine and so end it too.
	goexits bool
	// orphaned says that nobody may wait for the thread or an ancestor
	// (never joined, joined from a higher priority, by a Join that gave up
	// for a done context, or by a body that a Goexit ended first): it may
	// still run when Close begins, and a Run it makes then fails with
	// runtime.ErrClosed.
	orphaned bool
}

// pprog is a random program: threads started with Go that others share,
// and top-level threads started concurrently in the ways of pstart.
type pprog struct {
	seed   uint64
	nodes  []*pnode
	shared []*pnode
	tops   []*pnode
	starts []pstart
	// cancel says each top-level context is cancelled: before the start
	// (0), after a short while (1), or never (2).
	cancel []int
}

// genProgram makes the program of seed: small, so that thousands run in a
// minute, with every operation in each few dozen programs.
func genProgram(seed uint64) *pprog {
	r := rand.New(rand.NewPCG(seed, seed>>32|1))
	pr := &pprog{seed: seed}
	// gen makes a thread at depth and priority prio. canGoexit says a
	// Goexit in it may end no goroutine but those the program expects,
	// canShare that it may wait for the shared threads, cancellable that
	// its context may be done.
	var gen func(depth int, prio int, canGoexit, canShare, cancellable, orphaned bool) *pnode
	gen = func(depth int, prio int, canGoexit, canShare, cancellable, orphaned bool) *pnode {
		nd := &pnode{id: len(pr.nodes), prio: prio, orphaned: orphaned}
		pr.nodes = append(pr.nodes, nd)
		steps := r.IntN(6)
		if depth >= 3 {
			steps = r.IntN(3)
		}
		for range steps {
			op := pop(r.IntN(int(numOps)))
			st := pstep{op: op}
			childPrio := prio
			if r.IntN(3) == 0 {
				childPrio = r.IntN(3) // may be lower: Join then refuses it
			}
			switch op {
			case opSpawnJoin, opSpawnLater, opSpawnOrphan:
				if depth >= 3 {
					st.op = opYield
					st.n = 1 + r.IntN(3)
					break
				}
				// Nobody joins an orphan, so its Goexit ends only a
				// worker's goroutine, which the runtime replaces.
				st.child = gen(depth+1, childPrio, canGoexit || op == opSpawnOrphan, canShare, cancellable,
					orphaned || cancellable || childPrio > prio || op == opSpawnOrphan)
			case opAwaitRun:
				if depth >= 3 {
					st.op = opSleep
					break
				}
				// Goexit in a Run inside Await would end the awaiting
				// thread's goroutine from inside Await: not generated.
				st.child = gen(depth+1, childPrio, false, canShare, false, orphaned)
			case opJoinShared, opAwaitWait:
				if !canShare || len(pr.shared) == 0 {
					st.op = opSleep
					break
				}
				st.n = r.IntN(len(pr.shared))
				if !canGoexit {
					st.op = opAwaitWait // a joined thread may run inline here, and Goexit
				}
			case opAwaitSleep, opSleep, opAwaitCtx:
				st.d = time.Duration(r.IntN(4)) * 50 * time.Microsecond
			case opYield:
				st.n = 1 + r.IntN(100)
			case opFork2:
				st.n = r.IntN(12)
			case opFor, opMap:
				st.n = r.IntN(300)
			}
			if st.op == opSleep && st.d == 0 {
				st.d = time.Duration(r.IntN(4)) * 50 * time.Microsecond
			}
			nd.steps = append(nd.steps, st)
		}
		switch k := r.IntN(10); {
		case k == 0:
			nd.end = endPanic
		case k == 1 && canGoexit:
			nd.end = endGoexit
		}
		return nd
	}
	for range r.IntN(3) {
		pr.shared = append(pr.shared, gen(1, r.IntN(3), true, false, false, false))
	}
	for range 1 + r.IntN(4) {
		start, cancel := pstart(r.IntN(5)), r.IntN(3)
		cancellable := (start == startGoCtx || start == startRunCtx) && cancel < 2
		// Goexit in a thread that Run runs on the calling goroutine ends
		// that goroutine; the program runs such a Run on a goroutine of its
		// own. Not from inside Await (opAwaitRun, startRunInAwait).
		pr.tops = append(pr.tops, gen(1, r.IntN(3), start != startRunInAwait, true, cancellable, false))
		pr.starts = append(pr.starts, start)
		pr.cancel = append(pr.cancel, cancel)
	}
	var goexits func(nd *pnode) bool
	goexits = func(nd *pnode) bool {
		nd.goexits = nd.end == endGoexit
		for _, st := range nd.steps {
			switch st.op {
			case opSpawnJoin, opSpawnLater:
				nd.goexits = goexits(st.child) || nd.goexits
			case opSpawnOrphan, opAwaitRun:
				goexits(st.child)
			case opJoinShared:
				nd.goexits = nd.goexits || pr.shared[st.n].goexits
			}
		}
		return nd.goexits
	}
	// A Goexit may end a body before its later Joins: their threads are
	// orphans then, and so are the threads they start.
	var orphan func(nd *pnode, orphaned bool)
	orphan = func(nd *pnode, orphaned bool) {
		nd.orphaned = nd.orphaned || orphaned
		for _, st := range nd.steps {
			if st.child != nil {
				orphan(st.child, nd.orphaned || st.op == opSpawnLater && nd.goexits)
			}
		}
	}
	for _, nd := range slices.Concat(pr.shared, pr.tops) {
		goexits(nd)
		orphan(nd, false)
	}
	return pr
}

func (pr *pprog) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "program %d:", pr.seed)
	var show func(nd *pnode, indent string)
	show = func(nd *pnode, indent string) {
		fmt.Fprintf(&b, "\n%sthread %d prio %d end %d", indent, nd.id, nd.prio, nd.end)
		for _, st := range nd.steps {
			fmt.Fprintf(&b, "\n%s  %s n=%d d=%v", indent, popNames[st.op], st.n, st.d)
			if st.child != nil {
				show(st.child, indent+"    ")
			}
		}
	}
	for i, nd := range pr.shared {
		fmt.Fprintf(&b, "\nshared %d:", i)
		show(nd, "  ")
	}
	for i, nd := range pr.tops {
		fmt.Fprintf(&b, "\ntop %d, start %d, cancel %d:", i, pr.starts[i], pr.cancel[i])
		show(nd, "  ")
	}
	return b.String()
}

// prun is one run of a program: what its threads did.
type prun struct {
	pr      *pprog
	rt      *runtime.Runtime
	ps      [3]fairness.Priority
	shared  []*thread.Handle[int]
	started []atomic.Int32
	ran     []atomic.Int32
	// pending counts the threads started and not yet ended; lastEnd is
	// when the last one ended, in ns since epoch.
	pending atomic.Int64
	lastEnd atomic.Int64
	epoch   time.Time
	mu      sync.Mutex
	errs    []string
}

// failf records a failure of the program, reported with its seed and text
// once the program has ended; threads call it.
func (x *prun) failf(format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.errs) < 20 {
		x.errs = append(x.errs, fmt.Sprintf(format, args...))
	}
}

// start notes that nd is about to be started.
func (x *prun) start(nd *pnode) {
	x.started[nd.id].Add(1)
	x.pending.Add(1)
}

// ended notes the end of a thread's body, however it ends.
func (x *prun) ended() {
	defer x.pending.Add(-1)
	now := int64(time.Since(x.epoch))
	for {
		old := x.lastEnd.Load()
		if now <= old || x.lastEnd.CompareAndSwap(old, now) {
			return
		}
	}
}

// check compares the outcome (v, err) of a wait for nd with what nd may
// give: joiner is the priority index of a joining thread (-1: not a Join),
// cancellable says the waiter's context may be done.
func (x *prun) check(what string, nd *pnode, joiner int, cancellable bool, v int, err error) {
	var pe *thread.PanicError
	switch {
	case joiner >= 0 && nd.prio > joiner:
		if !errors.Is(err, thread.ErrIncompatiblePriorities) {
			x.failf("%s of thread %d (prio %d) from prio %d: %v %v, want ErrIncompatiblePriorities", what, nd.id, nd.prio, joiner, v, err)
		}
	case cancellable && errors.Is(err, context.Canceled):
	case errors.Is(err, thread.ErrGoexit):
		if !nd.goexits {
			x.failf("%s of thread %d: ErrGoexit from a thread that never calls Goexit", what, nd.id)
		}
	case errors.As(err, &pe):
		if nd.end != endPanic || pe.Value != nd.id {
			x.failf("%s of thread %d: panic %v, want end %d", what, nd.id, pe.Value, nd.end)
		}
	case err != nil:
		x.failf("%s of thread %d: error %v", what, nd.id, err)
	case nd.end != endReturn || v != nd.id:
		x.failf("%s of thread %d: %d, want end %d with %d", what, nd.id, v, nd.end, nd.id)
	}
}

// body is the thread function of nd.
func (x *prun) body(nd *pnode) func(*thread.Ctx) int {
	return func(c *thread.Ctx) int {
		x.ran[nd.id].Add(1)
		defer x.ended()
		if p := x.ps[nd.prio]; c.Priority() != p {
			x.failf("thread %d runs at %v, want %v", nd.id, c.Priority(), p)
		}
		cancellable := c.Context().Done() != nil
		var later []func()
		for _, st := range nd.steps {
			if f := x.step(c, nd, st, cancellable); f != nil {
				later = append(later, f)
			}
		}
		for _, f := range later {
			f()
		}
		switch nd.end {
		case endPanic:
			panic(nd.id)
		case endGoexit:
			goruntime.Goexit()
		}
		return nd.id
	}
}

// spawn starts child from c and returns its handle.
func (x *prun) spawn(c *thread.Ctx, child *pnode) *thread.Handle[int] {
	x.start(child)
	return thread.Spawn(c, x.ps[child.prio], x.body(child))
}

// step runs st in thread nd; it returns what must run at the body's end.
func (x *prun) step(c *thread.Ctx, nd *pnode, st pstep, cancellable bool) func() {
	switch st.op {
	case opSpawnJoin:
		h := x.spawn(c, st.child)
		v, err := thread.Join(c, h)
		x.check("join", st.child, nd.prio, cancellable, v, err)
	case opSpawnLater:
		h := x.spawn(c, st.child)
		return func() {
			v, err := thread.Join(c, h)
			x.check("later join", st.child, nd.prio, cancellable, v, err)
		}
	case opSpawnOrphan:
		x.spawn(c, st.child)
	case opJoinShared:
		v, err := thread.Join(c, x.shared[st.n])
		x.check("join of shared", x.pr.shared[st.n], nd.prio, cancellable, v, err)
	case opAwaitSleep:
		thread.Await(c, func() struct{} { time.Sleep(st.d); return struct{}{} })
	case opAwaitWait:
		var v int
		var err error
		thread.Await(c, func() struct{} { v, err = x.shared[st.n].Wait(); return struct{}{} })
		x.check("wait of shared in await", x.pr.shared[st.n], -1, false, v, err)
	case opAwaitRun:
		x.start(st.child)
		var v int
		var err error
		thread.Await(c, func() struct{} {
			v, err = thread.Run(x.rt, x.ps[st.child.prio], x.body(st.child))
			return struct{}{}
		})
		if nd.orphaned && errors.Is(err, runtime.ErrClosed) {
			x.started[st.child.id].Add(-1) // refused: it never ran
			x.pending.Add(-1)
			break
		}
		x.check("run in await", st.child, -1, false, v, err)
	case opAwaitCtx:
		v, err := thread.AwaitContext(c, func(ctx context.Context) (int, error) {
			select {
			case <-time.After(st.d):
				return 7, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		})
		if err == nil && v != 7 || err != nil && !(cancellable && errors.Is(err, context.Canceled)) {
			x.failf("thread %d: AwaitContext gave %d %v", nd.id, v, err)
		}
	case opSleep:
		if err := thread.Sleep(c, st.d); err != nil && !(cancellable && errors.Is(err, context.Canceled)) {
			x.failf("thread %d: Sleep: %v", nd.id, err)
		}
	case opYield:
		for range st.n {
			thread.Yield(c)
		}
	case opFork2:
		if got := fib2(c, st.n); got != seqFib(st.n) {
			x.failf("thread %d: Fork2 fib(%d) = %d", nd.id, st.n, got)
		}
	case opFor:
		seen := make([]atomic.Int32, st.n)
		err := thread.For(c, 0, st.n, func(_ *thread.Ctx, i int) { seen[i].Add(1) })
		for i := range seen {
			if k := seen[i].Load(); k > 1 || k == 0 && err == nil {
				x.failf("thread %d: For ran iteration %d %d times (err %v)", nd.id, i, k, err)
			}
		}
		if err != nil && !(cancellable && errors.Is(err, context.Canceled)) {
			x.failf("thread %d: For: %v", nd.id, err)
		}
	case opMap:
		in := make([]int, st.n)
		for i := range in {
			in[i] = i
		}
		out, err := thread.Map(c, in, func(_ *thread.Ctx, i int) int { return 2 * i })
		switch {
		case err != nil && !(cancellable && errors.Is(err, context.Canceled)):
			x.failf("thread %d: Map: %v", nd.id, err)
		case err == nil:
			for i, v := range out {
				if v != 2*i {
					x.failf("thread %d: Map[%d] = %d", nd.id, i, v)
					break
				}
			}
		}
	case opMisuse:
		var ran atomic.Bool
		f := func(*thread.Ctx) int { ran.Store(true); return 0 }
		if _, err := thread.Run(x.rt, c.Priority(), f); !errors.Is(err, thread.ErrWaitInThread) {
			x.failf("thread %d: Run in a thread: %v", nd.id, err)
		}
		if _, err := thread.RunContext(c.Context(), x.rt, c.Priority(), f); !errors.Is(err, thread.ErrWaitInThread) {
			x.failf("thread %d: RunContext in a thread: %v", nd.id, err)
		}
		if err := x.rt.Close(); !errors.Is(err, runtime.ErrInThread) {
			x.failf("thread %d: Close in a thread: %v", nd.id, err)
		}
		if err := thread.Await(c, x.rt.Close); !errors.Is(err, runtime.ErrInThread) {
			x.failf("thread %d: Close in Await: %v", nd.id, err)
		}
		if ran.Load() {
			x.failf("thread %d: a refused Run ran its function", nd.id)
		}
	}
	return nil
}

// top runs top-level thread i of the program from an ordinary goroutine.
func (x *prun) top(i int) {
	nd, start := x.pr.tops[i], x.pr.starts[i]
	p := x.ps[nd.prio]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch x.pr.cancel[i] {
	case 0:
		cancel()
	case 1:
		time.AfterFunc(100*time.Microsecond, cancel)
	}
	cancellable := start == startGoCtx || start == startRunCtx
	x.start(nd)
	switch start {
	case startGo:
		v, err := thread.Go(x.rt, p, x.body(nd)).Wait()
		x.check("wait", nd, -1, false, v, err)
	case startGoCtx:
		h := thread.GoContext(ctx, x.rt, p, x.body(nd))
		if v, err := h.WaitContext(ctx); !errors.Is(err, context.Canceled) {
			x.check("wait with context", nd, -1, false, v, err)
		}
		v, err := h.Wait()
		x.check("wait", nd, -1, cancellable, v, err)
	case startRun, startRunCtx:
		// A Goexit in a thread that runs on this goroutine ends it: run
		// on a goroutine of its own, and take its end for ErrGoexit.
		done := make(chan struct{})
		var v int
		err := thread.ErrGoexit
		go func() {
			defer close(done)
			if start == startRun {
				v, err = thread.Run(x.rt, p, x.body(nd))
			} else {
				v, err = thread.RunContext(ctx, x.rt, p, x.body(nd))
			}
		}()
		<-done
		x.check("run", nd, -1, cancellable, v, err)
	case startRunInAwait:
		var v int
		var err error
		_, herr := thread.Run(x.rt, p, func(c *thread.Ctx) int {
			thread.Await(c, func() struct{} {
				v, err = thread.Run(x.rt, p, x.body(nd))
				return struct{}{}
			})
			return 0
		})
		if herr != nil {
			x.failf("helper of top %d: %v", i, herr)
		}
		x.check("run in await", nd, -1, false, v, err)
	}
}

// runProgram runs the program of seed at procs workers and reports
// whether it passed, and how long after its last thread's end Close
// returned.
func runProgram(t *testing.T, seed uint64, procs int) (closing time.Duration, ok bool) {
	t.Helper()
	pr := genProgram(seed)
	ignore := goleak.IgnoreCurrent()
	o := fairness.NewOrder()
	hi, mid, lo := o.New("hi"), o.New("mid"), o.New("lo")
	if o.Less(lo, mid) != nil || o.Less(mid, hi) != nil {
		t.Fatal("order")
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 2, mid: 1, lo: 1})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: crit, Seed: seed,
		OnPanic: func(fairness.Priority, any, []byte) {}})
	if err != nil {
		t.Fatal(err)
	}
	x := &prun{pr: pr, rt: rt, ps: [3]fairness.Priority{hi, mid, lo}, epoch: time.Now(),
		started: make([]atomic.Int32, len(pr.nodes)), ran: make([]atomic.Int32, len(pr.nodes))}
	fail := func(format string, args ...any) (time.Duration, bool) {
		t.Helper()
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("seed %d at Procs %d (replay: go test ./thread -run TestProperty -seed %d): %s\n%v\ngoroutines:\n%s",
			seed, procs, seed, fmt.Sprintf(format, args...), pr, dump.String())
		return 0, false
	}

	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, nd := range pr.shared {
			x.start(nd)
			x.shared = append(x.shared, thread.Go(rt, x.ps[nd.prio], x.body(nd)))
		}
		var wg sync.WaitGroup
		for i := range pr.tops {
			wg.Go(func() { x.top(i) })
		}
		wg.Wait()
		for i, h := range x.shared {
			v, err := h.Wait()
			x.check("wait of shared", pr.shared[i], -1, false, v, err)
		}
	}()
	select {
	case <-finished:
	case <-time.After(hangBound):
		return fail("the program did not finish in %v", hangBound)
	}

	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for began := time.Now(); ; {
		select {
		case err := <-closed:
			if err != nil {
				return fail("Close: %v", err)
			}
			closing = time.Since(x.epoch) - time.Duration(x.lastEnd.Load())
		case <-tick.C:
			since := time.Since(x.epoch) - time.Duration(x.lastEnd.Load())
			switch n := x.pending.Load(); {
			case n == 0 && since > hangBound:
				return fail("Close hangs: %v after the last thread ended", since.Round(time.Millisecond))
			case time.Since(began) > hangBound:
				return fail("Close hangs: %d threads never ended", n)
			}
			continue
		}
		break
	}
	for _, nd := range pr.nodes {
		if s, r := x.started[nd.id].Load(), x.ran[nd.id].Load(); s != r {
			x.failf("thread %d: started %d times, ran %d times", nd.id, s, r)
		}
	}
	if len(x.errs) > 0 {
		return fail("%s", strings.Join(x.errs, "\n"))
	}
	if err := goleak.Find(ignore); err != nil {
		return fail("goroutines left: %v", err)
	}
	return closing, true
}
