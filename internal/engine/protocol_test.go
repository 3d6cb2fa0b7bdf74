package engine

// White-box tests of the token, revocation, deal and sleep protocols. They
// drive tasks directly with a function body, without package thread.

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
)

type fn func(t *Task)

func (f fn) Run(t *Task) { f(t) }

// spawn forks f from the running task t at t's priority.
func spawn(t *Task, f func(*Task)) *Task {
	c := &Task{}
	c.InitLike(t, fn(f))
	t.Spawn(c)
	return c
}

// submit starts f from outside the runtime at priority p.
func submit(tb testing.TB, rt *Runtime, p fairness.Priority, f func(*Task)) *Task {
	tb.Helper()
	t := &Task{}
	require.NoError(tb, t.Init(rt, p, fn(f)))
	require.NoError(tb, rt.Submit(t))
	return t
}

// testConfig is the configuration package runtime makes by default, with
// procs workers and criterion c.
func testConfig(procs int, c *fairness.Criterion) Config {
	return Config{
		Procs: procs, Order: c.Order(), Criterion: c,
		Quantum: 5 * time.Millisecond, DealEvery: 100 * time.Microsecond, Interrupt: time.Millisecond,
		Budget: 250 * time.Microsecond, Borrow: true, ReserveP: true, ShortSlices: true, Demote: true, Seed: 1,
	}
}

// levels gives an order lo < hi with the criterion shares.
func levels(t *testing.T, procs int, lo, hi float64) (*Runtime, fairness.Priority, fairness.Priority) {
	t.Helper()
	return levelsWith(t, procs, lo, hi, func(*Config) {})
}

// levelsWith is levels on a runtime whose configuration edit changes.
func levelsWith(t *testing.T, procs int, lo, hi float64, edit func(*Config)) (*Runtime, fairness.Priority, fairness.Priority) {
	t.Helper()
	o := fairness.NewOrder()
	l, h := o.New("lo"), o.New("hi")
	require.NoError(t, o.Less(l, h))
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{l: lo, h: hi})
	require.NoError(t, err)
	cfg := testConfig(procs, c)
	edit(&cfg)
	rt := New(cfg)
	t.Cleanup(func() { closeWithin(t, rt) })
	return rt, l, h
}

// spinUntil computes without any preemption point until flag is set, for
// at most limit: the shape of a long library call. It reports whether the
// flag came.
func spinUntil(flag *atomic.Bool, limit time.Duration) bool {
	end := time.Now().Add(limit)
	for !flag.Load() {
		if time.Now().After(end) {
			return false
		}
	}
	return true
}

const patience = 20 * time.Second // a bound for hangs, never a timing goal

// The processor time a thread computes detached (after its worker was taken
// away) is charged to its priority when it comes back, so Stats counts it.
// The detached time is charged from the revocation to the thread's return,
// so it is at least the 40 ms slept between the two, however loaded the
// machine. The watchdog is off (a long Interrupt), so that the revocation
// is the arriving thread's (steer), which counts the spinner as computing;
// a watchdog that saw little of it on a loaded machine would count it as
// blocked, and blocked time is not charged.
func TestDetachedTimeCharged(t *testing.T) {
	rt, lo, hi := levelsWith(t, 1, 50, 50, func(cfg *Config) { cfg.Interrupt = time.Hour })
	var stop, started atomic.Bool
	spun := submit(t, rt, lo, func(*Task) {
		started.Store(true)
		spinUntil(&stop, patience)
	})
	for !started.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	// The spinner passes no point from now on: after policy.StaleAfter, an
	// arriving thread of higher priority takes its worker (steer).
	time.Sleep(2 * policy.StaleAfter)
	submit(t, rt, hi, func(*Task) {}).Wait()
	time.Sleep(40 * time.Millisecond)
	stop.Store(true)
	spun.Wait()
	r, err := rt.Rank(lo)
	require.NoError(t, err)
	assert.NotZero(t, rt.Totals().Rescues)
	assert.GreaterOrEqual(t, rt.Totals().CPU[r], 40*time.Millisecond,
		"40 ms of detached spinning is charged to its priority")
}

// A top-priority thread arriving at a worker that already has a computing
// detached goroutine, and whose holder is stuck again in another low thread,
// still takes the token: it must not wait for calls that never end.
func TestArrivalRevokesTwice(t *testing.T) {
	rt, lo, hi := levels(t, 1, 50, 50)
	var first, second atomic.Bool
	var started atomic.Int32
	ok := make(chan bool, 2)
	hog := func(*Task) {
		started.Add(1)
		ok <- spinUntil(&second, patience)
	}
	submit(t, rt, lo, hog)
	submit(t, rt, lo, hog)
	for started.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	submit(t, rt, hi, func(*Task) { first.Store(true) }).Wait() // revokes the first hog
	for started.Load() < 2 {                                    // the second hog runs and is stuck
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Millisecond)
	submit(t, rt, hi, func(*Task) { second.Store(true) }).Wait()
	assert.True(t, first.Load())
	assert.True(t, <-ok && <-ok, "the second top-priority thread waited for the hogs")
	assert.GreaterOrEqual(t, rt.Totals().Rescues, uint64(2))
}

// A top-priority thread submitted while the only worker computes without
// preemption points runs anyway: the arriving thread's worker is revoked.
func TestArrivalRevokesStuckWorker(t *testing.T) {
	for _, procs := range []int{1, 2} {
		rt, lo, hi := levels(t, procs, 50, 50)
		var ran atomic.Bool
		var stuck sync.WaitGroup
		var spinning atomic.Int32
		ok := make([]bool, procs)
		for i := range procs {
			stuck.Add(1)
			submit(t, rt, lo, func(*Task) {
				defer stuck.Done()
				spinning.Add(1)
				ok[i] = spinUntil(&ran, patience)
			})
		}
		// Every worker is stuck before the top thread arrives (else it
		// could run on a worker that has not started its spinner yet).
		require.True(t, eventually(func() bool { return spinning.Load() == int32(procs) }), "P=%d: the spinners never started", procs)
		top := submit(t, rt, hi, func(*Task) { ran.Store(true) })
		top.Wait()
		stuck.Wait()
		for i := range ok {
			assert.True(t, ok[i], "P=%d: the top-priority thread waited for the stall", procs)
		}
		assert.NotZero(t, rt.Totals().Rescues, "P=%d", procs)

	}
}

// A child spawned just before its parent stalls runs on the worker's new
// holder: banks move with the worker.
func TestChildOfStuckThreadRuns(t *testing.T) {
	rt, lo, _ := levels(t, 1, 50, 50)
	var ran atomic.Bool
	ok := false
	root := submit(t, rt, lo, func(p *Task) {
		c := spawn(p, func(*Task) { ran.Store(true) })
		ok = spinUntil(&ran, patience)
		p.Join(c)
	})
	root.Wait()
	assert.True(t, ok, "the child waited for its parent's stall")
}

// Blocking outside Await, on something another queued thread provides,
// never deadlocks: the blocked worker's token is revoked after a round.
func TestBlockingOutsideAwait(t *testing.T) {
	for _, procs := range []int{1, 2} {
		rt, lo, hi := levels(t, procs, 50, 50)
		// A channel receive from a child that sends.
		got := 0
		root := submit(t, rt, lo, func(p *Task) {
			ch := make(chan int)
			c := spawn(p, func(*Task) { ch <- 42 })
			got = <-ch
			p.Join(c)
		})
		root.Wait()
		assert.Equal(t, 42, got, "P=%d", procs)

		// A WaitGroup in place of Join, over several children.
		var n atomic.Int32
		root = submit(t, rt, lo, func(p *Task) {
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				spawn(p, func(*Task) { n.Add(1); wg.Done() })
			}
			wg.Wait()
		})
		root.Wait()
		assert.Equal(t, int32(4), n.Load(), "P=%d", procs)

		// A mutex held by a preempted low-priority thread, wanted by a
		// high-priority one.
		var mu sync.Mutex
		var holding atomic.Bool
		low := submit(t, rt, lo, func(p *Task) {
			mu.Lock()
			holding.Store(true)
			for range 2000 { // preemption points while holding the lock
				p.Yield()
				time.Sleep(10 * time.Microsecond)
			}
			mu.Unlock()
		})
		for !holding.Load() {
			time.Sleep(time.Millisecond)
		}
		high := submit(t, rt, hi, func(*Task) { mu.Lock(); mu.Unlock() })
		high.Wait()
		low.Wait()
	}
}

// Stress: many roots fork and join at every level on more workers than
// cores, with inline joins that leave stale bank entries, joins of threads
// running elsewhere, deals, and now and then a stall or a blocking call that
// gets revoked. Every thread runs exactly once. Under -race this found the
// race between finish writing a waiter's depth and a deal reading it from a
// stale entry.
func TestStressForkJoinRevoke(t *testing.T) {
	rt, lo, hi := levels(t, 4, 50, 50)
	const roots = 64
	var runs atomic.Int64
	var tree func(p *Task, n int) int
	tree = func(p *Task, n int) int {
		runs.Add(1)
		if n < 2 {
			if n == 1 && runs.Load()%997 == 0 {
				time.Sleep(300 * time.Microsecond) // blocks outside Await
			}
			return 1
		}
		var a, b int
		ca := spawn(p, func(t *Task) { a = tree(t, n-1) })
		cb := spawn(p, func(t *Task) { b = tree(t, n-2) })
		p.Join(ca) // not the youngest: claimed inline, its entry goes stale
		p.Join(cb)
		return a + b + 1
	}
	runTrees(t, rt, lo, hi, roots, 16, tree)
	assert.Equal(t, int64(roots*treeNodes(16)), runs.Load(), "every thread ran exactly once")
}

// treeNodes is the number of nodes of the fork trees of the stress tests.
func treeNodes(n int) int {
	a, b := 1, 1
	for range n - 1 {
		a, b = b, a+b+1
	}
	return b
}

// runTrees submits roots trees of the given depth from as many goroutines,
// one in four at priority hi, and checks each tree's node count.
func runTrees(t *testing.T, rt *Runtime, lo, hi fairness.Priority, roots, depth int, tree func(*Task, int) int) {
	var wg sync.WaitGroup
	res := make([]int, roots)
	for i := range roots {
		p := lo
		if i%4 == 0 {
			p = hi
		}
		wg.Go(func() {
			var r int
			submit(t, rt, p, func(t *Task) { r = tree(t, depth) }).Wait()
			res[i] = r
		})
	}
	wg.Wait()
	for i, r := range res {
		assert.Equal(t, treeNodes(depth), r, "root %d", i)
	}
}

// Private forks (Forks, thread.Fork2's) under load at four workers,
// with threads that block outside Await now and then so that tokens are
// revoked, and a Spawn inside every fifth fork: every fork runs exactly
// once, inline by its parent or promoted and run elsewhere.
func TestStressPrivateForks(t *testing.T) {
	rt, lo, hi := levels(t, 4, 50, 50)
	const roots, depth = 32, 17
	var runs atomic.Int64
	var tree func(p *Task, n int) int
	tree = func(p *Task, n int) int {
		k := runs.Add(1)
		if n < 2 {
			if k%997 == 0 {
				time.Sleep(300 * time.Microsecond) // blocks outside Await
			}
			return 1
		}
		var b int
		s := p.Forks()
		fork := &lazyRec{f: func(t *Task) { b = tree(t, n-2) }}
		level := s.pushRec(fork)
		s.Point(p)
		var a int
		if k%5 == 0 {
			c := spawn(p, func(t *Task) { a = tree(t, n-1) })
			p.Join(c)
		} else {
			a = tree(p, n-1)
		}
		if s.Pop(level) || s.Take(level) {
			b = tree(p, n-2)
		} else {
			p.Join(&fork.task)
		}
		return a + b + 1
	}
	runTrees(t, rt, lo, hi, roots, depth, tree)
	assert.Equal(t, int64(roots*treeNodes(depth)), runs.Load(), "every fork ran exactly once")
	assert.Positive(t, rt.Totals().Promotions, "no private fork was promoted: the test did not test sharing")
}

// A deal never takes the thread its sender runs next: with the only
// thread of that rank in a bank, sendTo refuses; with two, the youngest stays.
func TestSendToKeepsNextThread(t *testing.T) {
	rt, lo, _ := levels(t, 2, 50, 50)
	w, v := newWorker(rt, 0, 1), newWorker(rt, 1, 2) // detached from the live workers
	r, _ := rt.Rank(lo)
	require.True(t, v.mail[r].Open())
	w.banks[r].Insert(item{t: &Task{}}, 1)
	assert.False(t, w.sendTo(v, r, r), "the thread about to run was dealt")
	w.banks[r].Insert(item{t: &Task{}}, 2)
	assert.True(t, w.sendTo(v, r, r), "surplus stays home")
	assert.Equal(t, 1, w.banks[r].Len())
	e, ok := w.banks[r].Youngest()
	require.True(t, ok)
	assert.Equal(t, 2, e.Depth, "the youngest stays")
}

// The index of open mailboxes follows the mailboxes: set as the owner opens
// one, cleared as a sender claims it or the owner closes it.
func TestOpenIndex(t *testing.T) {
	rt, lo, _ := levels(t, 2, 50, 50)
	// Detached from the live workers, with ids whose bits no live worker uses.
	w, v := newWorker(rt, 10, 1), newWorker(rt, 11, 2)
	r, _ := rt.Rank(lo)
	bit := func() bool { return rt.open[r][0].Load()&(1<<11) != 0 }
	v.open(r)
	assert.True(t, bit(), "opened")
	w.banks[r].Insert(item{t: &Task{}}, 1)
	w.banks[r].Insert(item{t: &Task{}}, 2)
	require.True(t, w.sendTo(v, r, policy.NoRank))
	assert.False(t, bit(), "claimed by a sender")
	assert.True(t, v.receive(), "the deal came in")
	v.open(r)
	assert.True(t, bit(), "opened again")
	v.refuse(r)
	assert.False(t, bit(), "closed by its owner")
}

// InThread tells a thread's code from an Await-ed call and from ordinary
// goroutines.
func TestInThread(t *testing.T) {
	rt, lo, hi := levels(t, 2, 50, 50)
	assert.False(t, InThread())
	for _, p := range []fairness.Priority{lo, hi} {
		var in, inAwait bool
		submit(t, rt, p, func(tk *Task) {
			in = InThread()
			tk.Suspend(func() { inAwait = InThread() })
		}).Wait()
		assert.True(t, in, "%v", p)
		assert.False(t, inAwait, "%v", p)
	}
}

// A thread that computes detached from its worker gets a Go P of its own
// while the worker computes too, so that the free P stays free for
// wake-ups; GOMAXPROCS comes back down once it is gone.
func TestDetachedThreadGetsAP(t *testing.T) {
	// Start low, whatever the test binary's -cpu says: the runtime adds Ps
	// above the program's setting.
	prev := goruntime.GOMAXPROCS(1)
	t.Cleanup(func() { goruntime.GOMAXPROCS(prev) })
	rt, lo, hi := levels(t, 1, 50, 50)
	base := goruntime.GOMAXPROCS(0)
	var stop, started atomic.Bool
	stuck := submit(t, rt, lo, func(*Task) {
		started.Store(true)
		for !stop.Load() { // no preemption point
		}
	})
	require.True(t, eventually(started.Load), "the stuck thread never started")
	// Takes the stuck worker's token and keeps it, computing.
	busy := submit(t, rt, hi, func(tk *Task) {
		for !stop.Load() {
			tk.Yield()
		}
	})
	raised := eventually(func() bool { return goruntime.GOMAXPROCS(0) == base+1 })
	stop.Store(true)
	stuck.Wait()
	busy.Wait()
	assert.True(t, raised, "GOMAXPROCS stayed at %d beside a detached thread", base)
	assert.True(t, eventually(func() bool { return goruntime.GOMAXPROCS(0) == base }),
		"GOMAXPROCS stayed raised after the detached thread ended")
}

// eventually polls cond until it holds or patience runs out.
func eventually(cond func() bool) bool { return eventuallyEvery(time.Millisecond, cond) }

// eventuallyEvery is eventually looking every period.
func eventuallyEvery(period time.Duration, cond func() bool) bool {
	for end := time.Now().Add(patience); time.Now().Before(end); time.Sleep(period) {
		if cond() {
			return true
		}
	}
	return false
}

// A top-priority thread queued in the bank of a worker whose holder is stuck
// in a low thread, while another low thread already computes detached from
// that worker, still runs: the watchdog must not refuse the revocation that
// it waits for. The top thread computes with preemption points; in a round
// of the low priority, once its prompt budget is spent, a checkpoint queues
// it and the worker starts a hog; the watchdog detaches that hog, and the
// worker's new holder, in the same round, starts the second hog. Nothing
// arrives from outside afterwards. This is the shape of the network echo
// that stopped answering in "stall sha256 P=2".
func TestQueuedTopThreadBehindSecondHog(t *testing.T) {
	rt, lo, hi := levels(t, 1, 50, 50)
	var release atomic.Bool
	defer release.Store(true)
	var started atomic.Int32
	var outlasted atomic.Bool // a hog gave up spinning before the top thread ended
	hog := func(*Task) {
		started.Add(1)
		// No preemption point, and spinning for longer than the wait below
		// lasts: a top thread that waited for a hog's call to end would not
		// end within it.
		if !spinUntil(&release, 2*patience) {
			outlasted.Store(true)
		}
	}
	var running atomic.Bool
	top := submit(t, rt, hi, func(t *Task) {
		running.Store(true)
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
			t.Yield()
		}
	})
	for !running.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	h1 := submit(t, rt, lo, hog)
	h2 := submit(t, rt, lo, hog)
	ctx, cancel := context.WithTimeout(context.Background(), patience) // a hang bound
	defer cancel()
	err := top.WaitContext(ctx)
	hogs := started.Load()
	release.Store(true)
	h1.Wait()
	h2.Wait()
	t.Logf("hogs started %d, rescues %d, preemptions %d", hogs, rt.Totals().Rescues, rt.Totals().Preemptions)
	require.NoError(t, err, "the top-priority thread waited for a hog's call to end")
	assert.False(t, outlasted.Load(), "a hog stopped spinning before the top-priority thread ended")
}

// A thread's processor time is in the totals as soon as a Wait for it
// returns, even when its worker has not switched priority since.
func TestFinishedThreadCharged(t *testing.T) {
	rt, lo, _ := levels(t, 1, 50, 50)
	for range 5 {
		submit(t, rt, lo, func(p *Task) {
			for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
				p.Yield()
			}
		}).Wait()
	}
	r, err := rt.Rank(lo)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rt.Totals().CPU[r], 20*time.Millisecond,
		"five threads of 5 ms each are charged once waited for")
}

// A revocation hands on the worker whose token its swap took, even when the
// goroutine it took it from comes back meanwhile and takes another worker's
// token (M5). The engine once asked the goroutine which worker it held
// after the swap had won: a goroutine back already (here through a lazy
// spawn, in the property test through a Wanted point of a parallel loop)
// answered with the worker it had just taken, so the seizer adopted that
// one (a RunHere inside an Await) while the goroutine ran threads on it, a
// data race on its owner state (cur), and the worker taken stayed without
// holder: a hang. A revoker that read the holder word of the first worker
// before the goroutine came back must not take the second one either: only
// a mode word that names the worker gives its token. revokeWon holds the
// revoker right after its swap until the goroutine is back; the watchdog is
// off (a long Interrupt), so that the test's revocations are the only ones.
func TestRevokerTakesTheWorkerItSwapped(t *testing.T) {
	var armed atomic.Bool
	var held func(h *gor)
	revokeWon = func(h *gor) {
		if armed.CompareAndSwap(true, false) {
			held(h)
		}
	}
	t.Cleanup(func() { revokeWon = nil }) // after Close, which levelsWith's cleanup makes
	rt, lo, hi := levelsWith(t, 2, 50, 50, func(cfg *Config) { cfg.Interrupt = time.Hour })
	loRank, err := rt.Rank(lo)
	require.NoError(t, err)
	hiRank, err := rt.Rank(hi)
	require.NoError(t, err)
	var inCode, goOn, back, done atomic.Bool
	spinner := submit(t, rt, lo, func(t *Task) {
		inCode.Store(true)
		spinUntil(&goOn, patience)
		c := spawn(t, func(*Task) {}) // a point that sees the revocation
		back.Store(true)
		spinUntil(&done, patience)
		t.Join(c)
	})
	require.True(t, eventually(inCode.Load))
	var a, b *worker // the spinner's worker, and the other one
	for _, w := range rt.workers {
		if w.running.Load() == int32(loRank) {
			a = w
		} else {
			b = w
		}
	}
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.True(t, eventually(func() bool { return b.sleeper.Load() != nil }), "the other worker sleeps")
	held = func(h *gor) {
		goOn.Store(true)
		if !assert.True(t, eventually(back.Load), "the spinner comes back from its revocation") {
			return
		}
		// The spinner runs its thread holding b's token now, while a's
		// holder word still names it.
		assert.True(t, rt.revoke(a, h, int32(hiRank), true) == nil, "a stale holder word gave another worker's token")
	}
	armed.Store(true)
	v := rt.revoke(a, a.holder.Load(), int32(hiRank), true)
	rt.newGor().start(a) // the worker this revocation took, whatever revoke said
	done.Store(true)
	if assert.NotNil(t, v) {
		assert.Equal(t, a.id, v.id, "the revocation must hand on the worker its swap took")
	}
	spinner.Wait()
}

// A round ends on time on a worker whose thread passes its preemption
// points far apart, as a time sink does. Such a thread's passes are paced
// (policy.Pace): they come at every point but do the duties only every
// policy.CheckEvery points, and a pass once returned without looking at
// the round's end, so that the worker noticed it only at the next tick or
// at the CheckEvery-th point. The aligned rounds end at fixed times, so
// the priority whose round came next lost the delay: beside a sink at
// medium priority, a kernel at low priority with share 25 % had 23 % of
// the time (docs/results.md, "Stretch"). Here the watchdog is off (a long
// Interrupt) and borrowing too, so that rounds alone divide the worker
// between a thread at hi that passes a point every 100 µs and one at lo
// that passes one every few microseconds; with the delay, lo lost most of
// each of its rounds.
func TestSparsePointsEndRoundsOnTime(t *testing.T) {
	rt, lo, hi := levelsWith(t, 1, 50, 50, func(cfg *Config) { cfg.Interrupt, cfg.Borrow = time.Hour, false })
	var stop atomic.Bool
	spinner := func(gap time.Duration) func(*Task) {
		return func(p *Task) {
			for !stop.Load() {
				for end := time.Now().Add(gap); time.Now().Before(end); {
				}
				p.Yield()
			}
		}
	}
	tl, th := submit(t, rt, lo, spinner(2*time.Microsecond)), submit(t, rt, hi, spinner(100*time.Microsecond))
	time.Sleep(40 * rt.quantum)
	stop.Store(true)
	tl.Wait()
	th.Wait()
	rl, err := rt.Rank(lo)
	require.NoError(t, err)
	rh, err := rt.Rank(hi)
	require.NoError(t, err)
	cpu := rt.Totals().CPU
	share := float64(cpu[rl]) / float64(cpu[rl]+cpu[rh])
	t.Logf("lo's share of the worker: %.3f", share)
	assert.Greater(t, share, 0.4, "lo's share of the worker, of 0.5: lo %v, hi %v", cpu[rl], cpu[rh])
}
