//go:build linux

// Command placement shows how the operating system places fairly's
// workers on the machine's cores while a kernel runs, with or without
// interactive threads arriving beside it.
//
//	go run ./bench/cmd/placement                          # fib(32) at 50-25-25 beside a sink
//	go run ./bench/cmd/placement -arrivals 5ms            # and a top-priority thread.Run every 5 ms
//	go run ./bench/cmd/placement -criterion alone         # the kernel alone, every share
//
// It runs the kernel -reps times at low priority (with -criterion 50-25-25,
// a medium-priority sink keeps every worker busy beside it, as in
// fairbench's Table 1) and reports the kernel's time, the cores the process
// used (getrusage over the wall time), its involuntary context switches,
// and, from /proc/self/task sampled every half millisecond, how often two
// or more of its runnable threads were queued on one core while another
// core ran none of them. That last state is what a worker moved onto a busy
// core looks like: Linux pulls one of the two away only after a while, and
// meanwhile the other core idles. docs/results.md, "Seizures that stack
// workers on one core", has what it found.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func main() {
	kernel := flag.String("kernel", "fib", "kernel to run at low priority")
	size := flag.Int("size", 0, "kernel size (0: its default)")
	reps := flag.Int("reps", 5, "runs of the kernel")
	procs := flag.Int("procs", 2, "fairly's workers")
	criterion := flag.String("criterion", "50-25-25", `"50-25-25" (a sink at medium priority beside the kernel) or "alone"`)
	arrivals := flag.Duration("arrivals", 0, "interval of top-priority thread.Run calls from an ordinary goroutine (0: none)")
	keep := flag.Bool("keep-gomaxprocs", false, "runtime.Config.KeepGOMAXPROCS: no spare Go P beside the workers")
	flag.Parse()
	if err := run(*kernel, *size, *reps, runtime.Config{Procs: *procs, KeepGOMAXPROCS: *keep}, *criterion, *arrivals); err != nil {
		fmt.Fprintln(os.Stderr, "placement:", err)
		os.Exit(1)
	}
}

func run(kernel string, size, reps int, cfg runtime.Config, criterion string, arrivals time.Duration) error {
	k, err := kernels.Lookup(kernel)
	if err != nil {
		return err
	}
	if size == 0 {
		size = k.DefaultSize
	}
	if reps < 1 || arrivals < 0 {
		return fmt.Errorf("-reps must be at least 1 and -arrivals not negative")
	}
	o := fairness.NewOrder()
	hi, mid, lo := o.New("interactive"), o.New("sink"), o.New("kernel")
	_ = o.Less(lo, mid) // fresh priorities: neither call can fail
	_ = o.Less(mid, hi)
	shares := map[fairness.Priority]float64{hi: 50, mid: 25, lo: 25}
	switch criterion {
	case "50-25-25":
	case "alone":
		shares = map[fairness.Priority]float64{hi: 0, mid: 0, lo: 100}
	default:
		return fmt.Errorf("-criterion %q is neither 50-25-25 nor alone", criterion)
	}
	crit, err := fairness.NewCriterion(o, shares)
	if err != nil {
		return err
	}
	cfg.Criterion = crit
	rt, err := runtime.New(cfg)
	if err != nil {
		return err
	}
	defer rt.Close()

	var sink *kernels.Sink // nil: none, already closed
	if criterion != "alone" {
		sink = kernels.StartSink(rt, mid) // fairbench's Table 1 sink
	}
	var stop atomic.Bool
	arrived := make(chan error, 1)
	go func() { // top-priority arrivals, if any
		var err error
		for arrivals > 0 && !stop.Load() && err == nil {
			time.Sleep(arrivals)
			_, err = thread.Run(rt, hi, func(*thread.Ctx) int { return kernels.FibSeq(10) })
		}
		arrived <- err
	}()
	halted := false
	halt := func() error { // once, before Close
		if halted {
			return nil
		}
		halted = true
		stop.Store(true)
		return errors.Join(sink.Close(), <-arrived)
	}
	defer halt()

	inst := k.New(size)
	time.Sleep(100 * time.Millisecond) // let the sink spread
	samples := make(chan placement, 1)
	go sample(&stop, samples)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	for i := range reps {
		t := time.Now()
		if err := kernels.RunFairly(rt, lo, inst); err != nil {
			return err
		}
		if err := inst.Check(); err != nil {
			return err
		}
		fmt.Printf("run %d: %v\n", i+1, time.Since(t).Round(time.Millisecond))
	}
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err := halt(); err != nil {
		return err
	}
	pl := <-samples
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	st := rt.Stats()
	fmt.Printf("%s at %s, P=%d, GOMAXPROCS %d, arrivals every %v: kernel %v in %d runs\n", kernel, criterion, rt.Procs(), goruntime.GOMAXPROCS(0), arrivals, wall.Round(time.Millisecond), reps)
	fmt.Printf("cores used %.2f; involuntary switches %d/s; seizures %d, rescues %d\n",
		cpu.Seconds()/wall.Seconds(), int(float64(ru1.Nivcsw-ru0.Nivcsw)/wall.Seconds()), st.Seizures, st.Rescues)
	if pl.n > 0 {
		fmt.Printf("samples %d: runnable threads doubled up on one core while another ran none in %.1f%%\n", pl.n, 100*float64(pl.stacked)/float64(pl.n))
	}
	return nil
}

// placement counts samples of the process's runnable threads.
type placement struct{ n, stacked int }

// sample reads the state and core of every thread of the process every
// half millisecond until stop, leaving out its own thread, and sends the
// counts.
func sample(stop *atomic.Bool, out chan<- placement) {
	goruntime.LockOSThread() // its own thread stays out of the counts
	self := strconv.Itoa(syscall.Gettid())
	cores := goruntime.NumCPU()
	var pl placement
	for !stop.Load() {
		time.Sleep(500 * time.Microsecond)
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			break
		}
		per := make([]int, cores)
		for _, t := range tasks {
			if t.Name() == self {
				continue
			}
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/stat")
			if err != nil {
				continue // ended meanwhile
			}
			// Fields after the command's closing parenthesis: state is the
			// first (field 3 of proc(5)), the last core the 37th (field 39).
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) < 37 || f[0] != "R" {
				continue
			}
			if c, err := strconv.Atoi(f[36]); err == nil && c < cores {
				per[c]++
			}
		}
		pl.n++
		if idle, double := count(per); idle && double {
			pl.stacked++
		}
	}
	out <- pl
}

// count reports whether some core had no runnable thread of the process and
// some had two or more.
func count(per []int) (idle, double bool) {
	for _, n := range per {
		idle = idle || n == 0
		double = double || n >= 2
	}
	return idle, double
}
