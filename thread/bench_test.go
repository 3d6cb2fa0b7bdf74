package thread_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Runtime-level figures of the core: spawn+join cost, work efficiency and
// speedup of fork-join code, and how fast an Await-ed event resumes its
// thread while every worker computes. The kernel suite is in bench/.

func goFib(n int) int {
	if n < 2 {
		return n
	}
	var a int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { a = goFib(n - 1); wg.Done() }()
	b := goFib(n - 2)
	wg.Wait()
	return a + b
}

func fibCutoff(c *thread.Ctx, n, cutoff int) int {
	if n <= cutoff {
		return seqFib(n)
	}
	h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return fibCutoff(c, n-1, cutoff) })
	b := fibCutoff(c, n-2, cutoff)
	a, _ := thread.Join(c, h)
	return a + b
}

func benchRT(b *testing.B, procs int) (*runtime.Runtime, fairness.Priority) {
	o := fairness.NewOrder()
	p := o.New("work")
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 1})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: c})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt, p
}

// spawns(n) is the number of spawns fib(n) makes when it spawns at every call.
func spawns(n int) int {
	if n < 2 {
		return 0
	}
	return 1 + spawns(n-1) + spawns(n-2)
}

// benchForks runs fork(n) (a fib that forks at every call) at P procs and
// reports per fork: time, allocations and bytes, and, given the sequential
// time seq, the run time relative to it and the collector's cycles per
// second.
func benchForks(b *testing.B, procs, n int, fork func(*thread.Ctx, int) int, seq float64) {
	rt, p := benchRT(b, procs)
	var m0, m1 goruntime.MemStats
	goruntime.ReadMemStats(&m0)
	for b.Loop() {
		if _, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fork(c, n) }); err != nil {
			b.Fatal(err)
		}
	}
	goruntime.ReadMemStats(&m1)
	forks := float64(b.N) * float64(spawns(n))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/forks, "ns/spawn")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/forks, "allocs/spawn")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/forks, "B/spawn")
	if seq > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
		b.ReportMetric(float64(m1.NumGC-m0.NumGC)/b.Elapsed().Seconds(), "gc/s")
	}
}

// BenchmarkSpawnJoin: fib(27) forking at every call; ns/spawn compares a
// fairly thread (Spawn and Join, or Fork2) with a goroutine and a WaitGroup.
func BenchmarkSpawnJoin(b *testing.B) {
	const n = 27
	per := float64(spawns(n))
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("fairly/P=%d", procs), func(b *testing.B) {
			benchForks(b, procs, n, fib, 0)
		})
		b.Run(fmt.Sprintf("fork2/P=%d", procs), func(b *testing.B) {
			benchForks(b, procs, n, fib2, 0)
		})
	}
	b.Run("goroutines", func(b *testing.B) {
		for b.Loop() {
			goFib(n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, "ns/spawn")
	})
}

// BenchmarkFibCutoff: fib(35) with a sequential cutoff of 20, against the
// sequential code (work efficiency T1/Ts and speedup at P=2).
func BenchmarkFibCutoff(b *testing.B) {
	const n, cutoff = 35, 20
	b.Run("seq", func(b *testing.B) {
		for b.Loop() {
			seqFib(n)
		}
	})
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("fairly/P=%d", procs), func(b *testing.B) {
			rt, p := benchRT(b, procs)
			for b.Loop() {
				if _, err := thread.Run(rt, p, func(c *thread.Ctx) int { return fibCutoff(c, n, cutoff) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// busyLow starts a runtime of procs workers, criterion 50/50, whose low
// priority runs fib(25) (spawning at every call) over and over on every
// worker; stop ends the load, waits for it and reports what the load got
// meanwhile: fib(25)s a second, and the processor cores the process used
// (getrusage; absent where unknown), so that what the high-priority
// threads cost the load shows beside their latency.
func busyLow(b *testing.B, procs int) (rt *runtime.Runtime, hi fairness.Priority, stop func()) {
	hi, lo, crit := halves(b)
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: crit})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	var done atomic.Bool
	var fibs atomic.Int64
	load := thread.Go(rt, lo, func(c *thread.Ctx) int {
		for !done.Load() {
			fib(c, 25)
			fibs.Add(1)
		}
		return 0
	})
	time.Sleep(20 * time.Millisecond)
	start, cpu0, fibs0 := time.Now(), processCPU(), fibs.Load()
	return rt, hi, func() {
		done.Store(true)
		wall, cpu := time.Since(start), processCPU()-cpu0
		if _, err := load.Wait(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fibs.Load()-fibs0)/wall.Seconds(), "load-fib/s")
		if cpu0 >= 0 {
			b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
		}
	}
}

// reportLatency reports the median and 99th percentile of lat in µs.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// BenchmarkAwaitResponse: a high-priority thread Awaits events sent by an
// ordinary goroutine every 2 ms while low-priority fib (spawning at every
// call) keeps every worker busy, criterion 50/50. Reports the median and
// 99th percentile from the send to the thread running again.
func BenchmarkAwaitResponse(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("P=%d", procs), func(b *testing.B) {
			rt, hi, stop := busyLow(b, procs)
			events := make(chan time.Time)
			lat := make([]time.Duration, 0, b.N)
			resp := thread.Go(rt, hi, func(c *thread.Ctx) int {
				for {
					sent := thread.Await(c, func() time.Time { return <-events })
					if sent.IsZero() { // closed: the benchmark is over
						return 0
					}
					lat = append(lat, time.Since(sent))
				}
			})
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			for b.Loop() {
				time.Sleep(2 * time.Millisecond)
				events <- time.Now()
			}
			goruntime.ReadMemStats(&m1)
			close(events)
			if _, err := resp.Wait(); err != nil {
				b.Fatal(err)
			}
			stop()
			reportLatency(b, lat)
			// The collector under fine-grained load: cycles per second and the
			// longest stop-the-world pause any thread (the echo too) saw.
			b.ReportMetric(float64(m1.NumGC-m0.NumGC)/b.Elapsed().Seconds(), "gc/s")
			var longest uint64
			for i := m0.NumGC; i < m1.NumGC && i < m0.NumGC+256; i++ {
				longest = max(longest, m1.PauseNs[(i+255)%256])
			}
			b.ReportMetric(float64(longest)/1e3, "max-gc-pause-µs")
		})
	}
}

// BenchmarkRunBusy: the latency of one Run of a trivial high-priority
// thread from an ordinary goroutine, every 2 ms, while low-priority fib
// keeps every worker busy (criterion 50/50), against Go followed by Wait,
// which queues the thread for a worker. Run takes a worker that would
// switch to the thread at its next point at once (a seizure); Go waits for
// that point and for the hand-back. Reports p50 and p99 in µs.
func BenchmarkRunBusy(b *testing.B) {
	one := func(*thread.Ctx) int { return 1 }
	for _, procs := range []int{1, 2} {
		for _, mode := range []string{"run", "go+wait"} {
			b.Run(fmt.Sprintf("P=%d/%s", procs, mode), func(b *testing.B) {
				rt, hi, stop := busyLow(b, procs)
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					time.Sleep(2 * time.Millisecond)
					t0 := time.Now()
					var err error
					if mode == "run" {
						_, err = thread.Run(rt, hi, one)
					} else {
						_, err = thread.Go(rt, hi, one).Wait()
					}
					if err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				stop()
				reportLatency(b, lat)
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkFineFib: fib(30) with a fork at every call and no cutoff,
// against sequential fib and goroutines: reports the time relative to the
// sequential code (T1/Ts and TP/Ts, x-seq), the goal of lazy forks, and
// allocations per fork. Each case measures the sequential time anew just
// before it (the best of five runs), so that a machine busy with other
// work skews the ratio less than the times.
func BenchmarkFineFib(b *testing.B) {
	const n = 30
	b.Run("seq", func(b *testing.B) {
		for b.Loop() {
			seqFib(n)
		}
	})
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("fairly/P=%d", procs), func(b *testing.B) {
			benchForks(b, procs, n, fib, bestSeq(n))
		})
	}
	// P=8 on a 2-core machine: oversubscribed workers must not collapse
	// the fork path (no shared writes on it).
	for _, procs := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("fork2/P=%d", procs), func(b *testing.B) {
			benchForks(b, procs, n, fib2, bestSeq(n))
		})
	}
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("join2/P=%d", procs), func(b *testing.B) {
			benchForks(b, procs, n, join2Fib, bestSeq(n))
		})
	}
	b.Run("pair-calls", func(b *testing.B) {
		seq := bestSeq(n)
		var c thread.Ctx // never forks: pairFib only calls
		for b.Loop() {
			pairFib(&c, n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
	})
	b.Run("pair-poll", func(b *testing.B) {
		seq := bestSeq(n)
		var w pollWord // never raised: pollFib only calls
		for b.Loop() {
			pollFib(&w, n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
	})
	b.Run("record", func(b *testing.B) {
		seq := bestSeq(n)
		w, want := newRecWorker(nil), seqFib(n) // w's flag is never raised: nothing is promoted
		for b.Loop() {
			if r := recFib(w, n); r != want {
				b.Fatalf("record fib(%d) = %d", n, r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
	})
	b.Run("record/P=2", func(b *testing.B) {
		seq, want := bestSeq(n), seqFib(n)
		cpu0 := processCPU()
		for b.Loop() {
			if r := recFibP2(n); r != want {
				b.Fatalf("record fib(%d) at P=2 = %d", n, r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
		// Both goroutines spin or compute throughout, so fewer than two
		// cores means the OS ran their threads on one core at times.
		if cpu0 >= 0 {
			b.ReportMetric((processCPU()-cpu0).Seconds()/b.Elapsed().Seconds(), "cores")
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		seq := bestSeq(n)
		for b.Loop() {
			goFib(n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/seq, "x-seq")
	})
}

// pollWord is an attention word that nobody raises.
type pollWord struct{ attn atomic.Uint32 }

// pairPoll is the least a fork that does not inline costs in Go: a generic
// pair call through a function value that polls an attention word, with
// no record and no slow path but a plain call. Fork2 is this plus its
// record, its type check, its pop and its count (docs/design.md, the fork
// path); BenchmarkFineFib shows it beside Fork2.
//
//go:noinline
func pairPoll[A, R any](w *pollWord, f func(*pollWord, A) R, x, y A) (R, R) {
	if w.attn.Load() != 0 {
		w.attn.Store(0)
	}
	return f(w, x), f(w, y)
}

func pollFib(w *pollWord, n int) int {
	if n < 2 {
		return n
	}
	a, b := pairPoll(w, pollFib, n-1, n-2)
	return a + b
}

// The record controls: the best fork at every call plain Go reaches with a
// record per fork, for comparison with Fork2 (BenchmarkFineFib's record
// cases). The fork is written by hand into fib with direct calls, in the
// shape Spice (Zig) gives it: a record (function, argument) pushed on the
// worker's own stack before the first call and popped after it, a poll of
// a flag per fork, and promotion of the oldest record only when the flag
// is raised. At P = 2 two goroutines share a one-slot mailbox; a goroutine
// with nothing to do is the heartbeat: it raises the other's flag, at most
// once every recBeat. A ticker goroutine would need a processor of its
// own, and with both busy Go runs it only at a preemption.

// recBeat is the least time between two raises of a worker's flag.
const recBeat = 100 * time.Microsecond

// recWorker is one goroutine's stack of records: levels below bot were
// promoted (oldest first, so they are a prefix), levels from bot to top are
// plain calls still to make.
type recWorker struct {
	flag     atomic.Bool // raised by the other worker when it has nothing to do
	recs     []recFrame
	top, bot int
	box      *atomic.Pointer[recJob] // the mailbox both workers share
	other    *recWorker
	lastBeat time.Time // when this worker last raised other's flag
}

// recFrame is the record of one fork: the second call, and its job once
// promoted.
type recFrame struct {
	f   func(*recWorker, int) int
	arg int
	job *recJob
}

// recJob is a promoted record: taken by the other worker, or back by its
// owner at the join if nobody did.
type recJob struct {
	f    func(*recWorker, int) int
	arg  int
	res  int
	done atomic.Bool
}

func newRecWorker(box *atomic.Pointer[recJob]) *recWorker {
	return &recWorker{recs: make([]recFrame, 1024), box: box}
}

// recFib is fib with the record fork at every call.
func recFib(w *recWorker, n int) int {
	if n < 2 {
		return n
	}
	if w.flag.Load() {
		w.promote()
	}
	i := w.top
	w.recs[i] = recFrame{f: recFib, arg: n - 2}
	w.top = i + 1
	a := recFib(w, n-1)
	w.top = i
	if j := w.recs[i].job; j != nil {
		return a + w.join(i, j)
	}
	return a + recFib(w, n-2)
}

// promote offers the oldest unpromoted record in the mailbox, if it is
// empty.
//
//go:noinline
func (w *recWorker) promote() {
	w.flag.Store(false)
	if w.bot == w.top {
		return
	}
	r := &w.recs[w.bot]
	j := &recJob{f: r.f, arg: r.arg}
	if w.box.CompareAndSwap(nil, j) {
		r.job = j
		w.bot++
	}
}

// join returns the result of the promoted record at level i: it runs it
// itself if it is still in the mailbox, or else helps until the thief is
// done.
func (w *recWorker) join(i int, j *recJob) int {
	w.bot = i
	if w.box.CompareAndSwap(j, nil) {
		return j.f(w, j.arg)
	}
	w.waitFor(&j.done)
	return j.res
}

// waitFor runs jobs from the mailbox until done is set, and is the other
// worker's heartbeat meanwhile.
func (w *recWorker) waitFor(done *atomic.Bool) {
	for !done.Load() {
		if j := w.box.Load(); j != nil && w.box.CompareAndSwap(j, nil) {
			j.res = j.f(w, j.arg)
			j.done.Store(true)
		} else if now := time.Now(); now.Sub(w.lastBeat) >= recBeat {
			w.other.flag.Store(true)
			w.lastBeat = now
		}
	}
}

// recFibP2 is recFib(n) on two goroutines: this one and a helper that waits
// for promoted records until the result is in.
func recFibP2(n int) int {
	var box atomic.Pointer[recJob]
	w0, w1 := newRecWorker(&box), newRecWorker(&box)
	w0.other, w1.other = w1, w0
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { w1.waitFor(&stop) })
	r := recFib(w0, n)
	stop.Store(true)
	wg.Wait()
	return r
}

// bestSeq is the best time of five runs of seqFib(n), in ns.
func bestSeq(n int) float64 {
	best := time.Duration(1<<63 - 1)
	for range 5 {
		start := time.Now()
		seqFib(n)
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds())
}

func join2Fib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Join2(c,
		func(c *thread.Ctx) int { return join2Fib(c, n-1) },
		func(c *thread.Ctx) int { return join2Fib(c, n-2) })
	return a + b
}

// pairCalls is a pair of calls as a generic function would make them with
// a deferred guard, without a fork: the floor an earlier Fork2 stood on,
// which BenchmarkFineFib shows beside Fork2's cost.
func pairCalls[A, R any](c *thread.Ctx, f func(*thread.Ctx, A) R, x, y A) (R, R) {
	returned := false
	defer func() {
		if !returned {
			_ = c // where a guard would cancel the fork; no panic reaches this benchmark
		}
	}()
	rx := f(c, x)
	returned = true
	return rx, f(c, y)
}

func pairFib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := pairCalls(c, pairFib, n-1, n-2)
	return a + b
}

// BenchmarkFor: a parallel loop over 10M one-line bodies (a sum into
// per-iteration slots), against the plain loop and one goroutine per
// GOMAXPROCS chunk; reports ns and allocations per iteration.
func BenchmarkFor(b *testing.B) {
	const n = 10_000_000
	out := make([]int, n)
	for i := range out { // fault the pages in before the first timing
		out[i] = 1
	}
	body := func(i int) { out[i] = i * 3 }
	b.Run("seq", func(b *testing.B) {
		for b.Loop() {
			for i := range n {
				body(i)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
	})
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("fairly/P=%d", procs), func(b *testing.B) {
			rt, p := benchRT(b, procs)
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			for b.Loop() {
				_, err := thread.Run(rt, p, func(c *thread.Ctx) error {
					return thread.For(c, 0, n, func(_ *thread.Ctx, i int) { body(i) })
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			goruntime.ReadMemStats(&m1)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N)/n, "allocs/iter")
		})
	}
	b.Run("goroutines", func(b *testing.B) {
		procs := goruntime.GOMAXPROCS(0)
		for b.Loop() {
			var wg sync.WaitGroup
			for k := range procs {
				wg.Go(func() {
					for i := k * n / procs; i < (k+1)*n/procs; i++ {
						body(i)
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
	})
}

// BenchmarkRunIdle: the latency of one Run of a trivial thread from an
// ordinary goroutine while the runtime is idle (its workers asleep, 1 ms
// between calls), against Go followed by Wait, which hands the thread to a
// worker, and against a goroutine and a channel. Reports p50 and p99 in µs.
func BenchmarkRunIdle(b *testing.B) {
	rt, p := benchRT(b, 2)
	one := func(*thread.Ctx) int { return 1 }
	ch := make(chan int)
	for _, mode := range []string{"run", "go+wait", "goroutine"} {
		b.Run(mode, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				time.Sleep(time.Millisecond)
				t0 := time.Now()
				switch mode {
				case "run":
					thread.Run(rt, p, one)
				case "go+wait":
					thread.Go(rt, p, one).Wait()
				default:
					go func() { ch <- 1 }()
					<-ch
				}
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat)
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkShareBesideBorrower: fib(36) forking above n = 20 at low
// priority beside a time sink at medium that is always ready, criterion
// 50-25-25 with nothing at high, P = 2; reports the fraction of processor
// time low got (its share is 0.25) with prompt borrowing on, the default,
// and off. The sink borrows low's rounds only while its own recent
// processor time is below its share (policy.MayBorrow), so low keeps about
// 0.25 either way; a borrower that runs past the point where it goes over
// its share takes a little more.
func BenchmarkShareBesideBorrower(b *testing.B) {
	for _, borrow := range []bool{true, false} {
		b.Run(fmt.Sprintf("borrow=%v", borrow), func(b *testing.B) {
			o := fairness.NewOrder()
			hi, mid, lo := o.New("hi"), o.New("mid"), o.New("lo")
			if err := errors.Join(o.Less(lo, mid), o.Less(mid, hi)); err != nil {
				b.Fatal(err)
			}
			c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, mid: 25, lo: 25})
			if err != nil {
				b.Fatal(err)
			}
			rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: c, NoPromptBorrowing: !borrow})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			var stop, started atomic.Bool
			spin := func(c *thread.Ctx) int {
				started.Store(true)
				for !stop.Load() {
					seqFib(18)
					thread.Yield(c)
				}
				return 0
			}
			sink := thread.Go(rt, mid, func(c *thread.Ctx) error {
				hs := []*thread.Handle[int]{thread.Spawn(c, mid, spin), thread.Spawn(c, mid, spin), thread.Spawn(c, mid, spin)}
				spin(c)
				for _, h := range hs {
					if _, err := thread.Join(c, h); err != nil {
						return err
					}
				}
				return nil
			})
			for !started.Load() {
				time.Sleep(time.Millisecond)
			}
			for b.Loop() {
				if _, err := thread.Run(rt, lo, func(c *thread.Ctx) int { return fibForkCutoff(c, 36) }); err != nil {
					b.Fatal(err)
				}
			}
			st := rt.Stats()
			stop.Store(true)
			if _, err := sink.Wait(); err != nil {
				b.Fatal(err)
			}
			for _, ps := range st.Priorities {
				if ps.Priority == lo {
					b.ReportMetric(ps.CPUShare, "low-share")
				}
			}
		})
	}
}

// fibForkCutoff is fib forking with Fork2 above n = 20.
func fibForkCutoff(c *thread.Ctx, n int) int {
	if n <= 20 {
		return seqFib(n)
	}
	a, b := thread.Fork2(c, fibForkCutoff, n-1, n-2)
	return a + b
}

// halves gives two priorities, lo below hi, with half the processors each.
func halves(b *testing.B) (hi, lo fairness.Priority, c *fairness.Criterion) {
	o := fairness.NewOrder()
	hi, lo = o.New("hi"), o.New("lo")
	if err := o.Less(lo, hi); err != nil {
		b.Fatal(err)
	}
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, lo: 50})
	if err != nil {
		b.Fatal(err)
	}
	return hi, lo, c
}

// BenchmarkShareBesideLibraryCalls: fib(32) forking above n = 20 at high
// priority beside two low-priority threads that sort a million keys in a
// loop with no fairly call inside (a library call), criterion 50-50, P = 2;
// with the OS threads of such calls demoted once detached (the default) and
// kept (Config.KeepOSPriority). Reports the stretch of fib against its
// time alone (its share is 0.5, so about 2 is fair) and how many sorts the
// low priority completes per second.
func BenchmarkShareBesideLibraryCalls(b *testing.B) {
	keys := make([]int64, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = r.Int64()
	}
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("keep=%v", keep), func(b *testing.B) {
			hi, lo, c := halves(b)
			rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: c, KeepOSPriority: keep})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			job := func() {
				if _, err := thread.Run(rt, hi, func(c *thread.Ctx) int { return fibForkCutoff(c, 32) }); err != nil {
					b.Fatal(err)
				}
			}
			alone := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				job()
				alone = min(alone, time.Since(start))
			}
			var stop atomic.Bool
			var sorts atomic.Int64
			var hogs []*thread.Handle[int]
			for range 2 {
				hogs = append(hogs, thread.Go(rt, lo, func(*thread.Ctx) int {
					for !stop.Load() {
						slices.Sort(slices.Clone(keys))
						sorts.Add(1)
					}
					return 0
				}))
			}
			time.Sleep(100 * time.Millisecond) // the sorts under way
			sorts.Store(0)
			start := time.Now()
			for b.Loop() {
				job()
			}
			elapsed := time.Since(start)
			stop.Store(true)
			for _, h := range hogs {
				if _, err := h.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(elapsed)/float64(b.N)/float64(alone), "stretch")
			b.ReportMetric(float64(sorts.Load())/elapsed.Seconds(), "sorts/s")
		})
	}
}
