package thread_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// setup builds the two-priority runtime the examples share: ui above
// batch, each with half of the machine.
func setup() (rt *runtime.Runtime, ui, batch fairness.Priority) {
	o := fairness.NewOrder()
	ui, batch = o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		panic(err)
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	if err != nil {
		panic(err)
	}
	rt, err = runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	if err != nil {
		panic(err)
	}
	return rt, ui, batch
}

// fibonacci forks a thread for one branch and computes the other itself.
func fibonacci(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return fibonacci(c, n-1) })
	b := fibonacci(c, n-2)
	a, _ := thread.Join(c, h)
	return a + b
}

func ExampleRun() {
	rt, _, batch := setup()
	defer rt.Close()

	v, err := thread.Run(rt, batch, func(c *thread.Ctx) int { return fibonacci(c, 20) })
	fmt.Println(v, err)
	// Output: 6765 <nil>
}

func ExampleGo() {
	rt, ui, batch := setup()
	defer rt.Close()

	// Start a long computation in the background, then do something urgent.
	sum := thread.Go(rt, batch, func(c *thread.Ctx) int {
		s := 0
		for i := range 1_000_000 {
			s += i
			if i%10_000 == 0 {
				thread.Yield(c)
			}
		}
		return s
	})
	greeting := thread.Go(rt, ui, func(c *thread.Ctx) string { return "hello from " + c.Priority().String() })
	fmt.Println(greeting.Wait())
	fmt.Println(sum.Wait())
	// Output:
	// hello from ui <nil>
	// 499999500000 <nil>
}

func ExampleSpawn() {
	rt, _, batch := setup()
	defer rt.Close()

	// Sum the squares of 1..8, one thread per square.
	total, _ := thread.Run(rt, batch, func(c *thread.Ctx) int {
		var hs []*thread.Handle[int]
		for i := 1; i <= 8; i++ {
			hs = append(hs, thread.Spawn(c, c.Priority(), func(*thread.Ctx) int { return i * i }))
		}
		s := 0
		for _, h := range hs {
			v, _ := thread.Join(c, h)
			s += v
		}
		return s
	})
	fmt.Println(total)
	// Output: 204
}

func ExampleJoin() {
	rt, ui, batch := setup()
	defer rt.Close()

	msg, _ := thread.Run(rt, ui, func(c *thread.Ctx) string {
		// A ui thread may spawn batch work, but waiting for it would let
		// the batch priority hold up the ui one: Join refuses.
		h := thread.Spawn(c, batch, func(*thread.Ctx) int { return 42 })
		if _, err := thread.Join(c, h); errors.Is(err, thread.ErrIncompatiblePriorities) {
			return "refused: ui must not wait for batch"
		}
		return "joined"
	})
	fmt.Println(msg)

	// The other way round is fine: batch may wait for ui work.
	v, err := thread.Run(rt, batch, func(c *thread.Ctx) int {
		h := thread.Spawn(c, ui, func(*thread.Ctx) int { return 42 })
		v, err := thread.Join(c, h)
		if err != nil {
			panic(err)
		}
		return v
	})
	fmt.Println(v, err)

	// A panic in a thread comes back from Join (or Wait) as an error.
	_, err = thread.Run(rt, batch, func(c *thread.Ctx) int {
		h := thread.Spawn(c, batch, func(*thread.Ctx) int { panic("out of cheese") })
		_, err := thread.Join(c, h)
		var pe *thread.PanicError
		if errors.As(err, &pe) {
			fmt.Println("panic:", pe.Value)
		}
		return 0
	})
	fmt.Println(err)
	// Output:
	// refused: ui must not wait for batch
	// 42 <nil>
	// panic: out of cheese
	// <nil>
}

func ExampleAwait() {
	rt, ui, _ := setup()
	defer rt.Close()

	// A pipe stands for a terminal or a socket: reads block until a line comes.
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprintln(pw, "hello")
		fmt.Fprintln(pw, "world")
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	got, _ := thread.Run(rt, ui, func(c *thread.Ctx) []string {
		var lines []string
		for {
			// While the read blocks, the worker runs other threads.
			line := thread.Await(c, func() string {
				l, _ := br.ReadString('\n')
				return l
			})
			if line == "" {
				return lines
			}
			lines = append(lines, strings.TrimSpace(line))
		}
	})
	fmt.Println(got)
	// Output: [hello world]
}

func ExampleSleep() {
	rt, ui, _ := setup()
	defer rt.Close()

	waited, _ := thread.Run(rt, ui, func(c *thread.Ctx) time.Duration {
		start := time.Now()
		thread.Sleep(c, 20*time.Millisecond) // the worker is free meanwhile
		return time.Since(start)
	})
	fmt.Println(waited >= 20*time.Millisecond)
	// Output: true
}

func ExampleYield() {
	rt, _, batch := setup()
	defer rt.Close()

	// A long loop without spawns or joins: Yield now and then lets the
	// worker switch to more urgent threads on time.
	count, _ := thread.Run(rt, batch, func(c *thread.Ctx) int {
		primes := 0
		for n := 2; n < 20_000; n++ {
			if n%1000 == 0 {
				thread.Yield(c)
			}
			prime := true
			for d := 2; d*d <= n; d++ {
				if n%d == 0 {
					prime = false
					break
				}
			}
			if prime {
				primes++
			}
		}
		return primes
	})
	fmt.Println(count, "primes below 20000")
	// Output: 2262 primes below 20000
}

// fib3 forks with Fork2 at every call: no cutoff, no allocation per fork.
func fib3(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Fork2(c, fib3, n-1, n-2)
	return a + b
}

func ExampleFork2() {
	rt, _, batch := setup()
	defer rt.Close()

	v, err := thread.Run(rt, batch, func(c *thread.Ctx) int { return fib3(c, 25) })
	fmt.Println(v, err)
	// Output: 75025 <nil>
}

func ExampleFor() {
	rt, _, batch := setup()
	defer rt.Close()

	squares := make([]int, 1000)
	loopErr, err := thread.Run(rt, batch, func(c *thread.Ctx) error {
		// Iterations run in order on this thread; halves of the rest go to
		// other workers only when they ask for work.
		return thread.For(c, 0, len(squares), func(_ *thread.Ctx, i int) { squares[i] = i * i })
	})
	fmt.Println(squares[999], loopErr, err)
	// Output: 998001 <nil> <nil>
}

// RunContext gives a thread a context: here a deadline. The thread's Sleep
// ends when the deadline passes, and a loop checks the context as it would
// call Yield.
func ExampleRunContext() {
	rt, _, batch := setup()
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	steps, err := thread.RunContext(ctx, rt, batch, func(c *thread.Ctx) int {
		n := 0
		for c.Context().Err() == nil {
			if err := thread.Sleep(c, time.Millisecond); err != nil {
				break // the deadline passed while it slept
			}
			n++
		}
		return n
	})
	fmt.Println(err, steps > 0, ctx.Err())
	// Output: <nil> true context deadline exceeded
}

// AwaitContext passes the thread's context to a blocking call and returns
// as soon as the context is done, even if the call ignores it.
func ExampleAwaitContext() {
	rt, ui, _ := setup()
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	never := make(chan string)
	defer close(never)
	h := thread.GoContext(ctx, rt, ui, func(c *thread.Ctx) error {
		_, err := thread.AwaitContext(c, func(context.Context) (string, error) {
			return <-never, nil // a call that ignores its context
		})
		return err
	})
	cancel()
	err, _ := h.Wait()
	fmt.Println(err)
	// Output: context canceled
}
