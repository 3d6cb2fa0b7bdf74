package harness

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/bank"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/internal/policy"
	"github.com/fairlyprompt/fairly/internal/sim"
	"github.com/fairlyprompt/fairly/mailbox"
	fairlyrt "github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Calibration of the simulator: the costs of the runtime's own operations
// and of the kernels' leaves, measured on this machine with the real code
// (the runtime, the bank and mailbox packages, the kernels). The sim
// experiment simulates with sim.DefaultCosts and sim.DefaultGrain, which
// are such measurements made once, so that its tables are reproducible; it
// prints the costs measured now beside them.

// simCalibration measures the costs; it takes about a second.
func simCalibration() (sim.Costs, sim.Grain, error) {
	var c sim.Costs
	var g sim.Grain
	fork, err := forkCost()
	if err != nil {
		return c, g, err
	}
	c.Spawn, c.Join = fork/2, fork-fork/2 // a fork and its join, measured together
	c.Deal, c.Receive = dealCost()
	c.Round = roundCost()
	c.Service = serviceCost()
	c.Handoff = handoffCost()
	if c.Arrive, err = arriveCost(); err != nil {
		return c, g, err
	}
	c.Wake = wakeCost()
	c.SpinWake = spinWakeCost()
	c.Steer = steerCost()
	c.SinkChunk = perOp(20, func() { kernels.FibSeq(18) })
	g.FibLeaf = perOp(50, func() { kernels.FibSeq(sim.FibLeafN) })
	g.UTSNode = perOp(50, func() { kernels.FibSeq(sim.UTSNodeN) })
	g.BFSEdge, g.SortKey = kernelLeafCosts()
	return c, g, nil
}

// perOp is the median time of one call of f over reps runs.
func perOp(reps int, f func()) int64 {
	ts := make([]int64, reps)
	for i := range ts {
		start := time.Now()
		f()
		ts[i] = int64(time.Since(start))
	}
	return median(ts)
}

func median(ts []int64) int64 {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

// batched is the median over reps of the time per operation of f(n).
func batched(reps, n int, f func(n int)) int64 {
	return perOp(reps, func() { f(n) }) / int64(n)
}

// forkCost is what a fork and its join add to a call: thread.Fork2's fib
// at every call on one worker, less sequential fib, per fork.
func forkCost() (int64, error) {
	rt, err := fairlyrt.New(fairlyrt.Config{Procs: 1})
	if err != nil {
		return 0, err
	}
	const n = 22
	top := rt.Order().Top()
	var runErr error
	forked := perOp(9, func() {
		_, err := thread.Run(rt, top, func(c *thread.Ctx) int { return forkFib(c, n) })
		runErr = err
	})
	if err := rt.Close(); runErr == nil {
		runErr = err
	}
	seq := perOp(9, func() { kernels.FibSeq(n) })
	forks := (sim.FibCalls(n) - 1) / 2
	return max(1, (forked-seq)/forks), runErr
}

// forkFib is fib forking at every call with thread.Fork2.
func forkFib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Fork2(c, forkFib, n-1, n-2)
	return a + b
}

// dealCost is a deal of a bank of 64 threads (split, claim and fill a
// mailbox) and its receipt (take the batch into a bank).
func dealCost() (deal, receive int64) {
	const reps, n = 2000, 64
	var b, dst bank.Bank[int]
	var m mailbox.Mailbox[bank.Entry[int]]
	var sendNs, recvNs []int64
	for range 9 {
		var send, recv time.Duration
		for range reps {
			for i := range n {
				b.Insert(i, i)
			}
			m.Open()
			start := time.Now()
			if m.TryClaim() {
				m.Send(b.Split(nil))
			}
			mid := time.Now()
			es, _ := m.Receive()
			for _, e := range es {
				dst.Insert(e.Item, e.Depth)
			}
			recv += time.Since(mid)
			send += mid.Sub(start)
			b.Clear(nil)
			dst.Clear(nil)
		}
		sendNs, recvNs = append(sendNs, int64(send)/reps), append(recvNs, int64(recv)/reps)
	}
	return median(sendNs), median(recvNs)
}

// roundCost is a round switch: the aligned primary, closing three mailboxes.
func roundCost() int64 {
	o := fairness.NewOrder()
	hi, mid, lo := o.New("h"), o.New("m"), o.New("l")
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, mid: 25, lo: 25})
	if err != nil {
		panic(err) // three fresh priorities of o
	}
	var ms [3]mailbox.Mailbox[bank.Entry[int]]
	sink := 0
	ns := batched(9, 100_000, func(n int) {
		for k := range uint64(n) {
			sink += policy.AlignedPrimary(c, 1, k, c.Len())
			for i := range ms {
				ms[i].Close()
			}
		}
	})
	runtime.KeepAlive(sink)
	return ns
}

// serviceCost is a pass through the duties with nothing to do: the
// attention word, beat, clock read and the checks of the request cell and
// inbox.
func serviceCost() int64 {
	var attn, inbox atomic.Uint32
	var beat atomic.Uint64
	var last atomic.Int64
	var req mailbox.RequestCell
	epoch := time.Now()
	return batched(9, 100_000, func(n int) {
		for range n {
			attn.Store(0)
			beat.Add(1)
			last.Store(int64(time.Since(epoch)))
			if req.Pending() || inbox.Load() != 0 {
				panic("nothing was posted")
			}
		}
	})
}

// handoffCost is one hand-off of control between two goroutines through
// channels, as a token passes between a parked goroutine and its resumer.
func handoffCost() int64 {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	defer close(ping)
	return batched(9, 20_000, func(n int) {
		for range n {
			ping <- struct{}{}
			<-pong
		}
	}) / 2
}

// arriveCost is how long a thread takes to run again after Await, once
// the awaited call has returned, on an idle runtime: what the echo's
// thread, resumed when its read returns, spends taking a worker (the part
// of a response that Table 3's records call fairly's part). The call
// returns 1 ms after the previous one: after 20 ms, the real echo's
// interval, the machine's processors have gone to sleep and the return
// takes several times longer, which no cost of the scheduler describes
// (docs/simulation.md, "At P = 2: the simulator against the real
// runtime").
func arriveCost() (int64, error) {
	rt, err := fairlyrt.New(fairlyrt.Config{Procs: 1})
	if err != nil {
		return 0, err
	}
	const n = 50
	ch := make(chan struct{}, n) // never blocks the sender, even if the thread failed to start
	var ns []int64
	done := make(chan error, 1)
	go func() {
		_, err := thread.Run(rt, rt.Order().Top(), func(c *thread.Ctx) int {
			for {
				back := thread.Await(c, func() time.Time {
					if _, ok := <-ch; !ok {
						return time.Time{}
					}
					return time.Now()
				})
				if back.IsZero() {
					return 0
				}
				ns = append(ns, int64(time.Since(back)))
			}
		})
		done <- err
	}()
	for range n {
		time.Sleep(time.Millisecond)
		ch <- struct{}{}
	}
	close(ch)
	if err := errors.Join(<-done, rt.Close()); err != nil {
		return 0, err
	}
	return median(ns), nil
}

// wakeCost is how long a goroutine parked for a while takes to run after
// it is woken: an idle worker past its spin.
func wakeCost() int64 {
	ch := make(chan time.Time)
	var wg sync.WaitGroup
	var got []int64
	wg.Go(func() {
		for sent := range ch {
			got = append(got, int64(time.Since(sent)))
		}
	})
	for range 50 {
		time.Sleep(200 * time.Microsecond) // the receiver parks
		ch <- time.Now()
	}
	close(ch)
	wg.Wait()
	return median(got)
}

// spinWakeCost is how long a spinning goroutine, yielding between looks,
// takes to see a flag another goroutine raised.
func spinWakeCost() int64 {
	var flag atomic.Int64
	var got []int64
	for range 50 {
		done := make(chan int64)
		go func() {
			for flag.Load() == 0 {
				runtime.Gosched()
			}
			done <- int64(time.Now().UnixNano()) - flag.Load()
		}()
		time.Sleep(20 * time.Microsecond)
		flag.Store(time.Now().UnixNano())
		got = append(got, <-done)
		flag.Store(0)
	}
	return median(got)
}

// steerCost is scoring 16 workers and pushing into an inbox under its lock.
func steerCost() int64 {
	var mu sync.Mutex
	var inbox []int
	var n atomic.Int32
	sink := 0
	ns := batched(9, 100_000, func(reps int) {
		for i := range reps {
			best := -1 << 30
			for w := range 16 {
				best = max(best, policy.SteerScore(2, w%3, (i+w)%3, false, false))
			}
			sink += best
			mu.Lock()
			inbox = append(inbox[:0], i)
			n.Add(1)
			mu.Unlock()
		}
	})
	runtime.KeepAlive(sink)
	return ns
}

// kernelLeafCosts times the real BFS and sample sort sequentially at their
// quick sizes: per edge scanned, and per key and level of comparisons.
func kernelLeafCosts() (edge, key int64) {
	cost := func(name string, size int, per func(n float64) float64) int64 {
		k, err := kernels.Lookup(name)
		if err != nil {
			panic(err) // the kernels package has bfs and sort
		}
		inst := k.New(size)
		t := perOp(3, inst.Seq)
		return max(1, int64(math.Round(float64(t)/per(float64(size)))))
	}
	edge = cost("bfs", 200_000, func(n float64) float64 { return 16 * n })
	key = cost("sort", 1_000_000, func(n float64) float64 { return n * (math.Log2(n) + 1) })
	return edge, key
}
