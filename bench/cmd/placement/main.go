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
// fairbench's Table 1) and reports, over the kernel's runs (not the checks
// of their results), the kernel's time, the cores the process used
// (getrusage over the wall time), its involuntary context switches,
// and, from /proc/self/task sampled every half millisecond, how often two
// or more of its runnable threads were queued on one core while another
// core ran none of them. That last state is what a worker moved onto a busy
// core looks like: Linux pulls one of the two away only after a while, and
// meanwhile the other core idles. docs/results.md, "Seizures that stack
// workers on one core", has what it found. It also gives the kernel's
// share of the workers' time, and with -cpuprofile writes a CPU profile of
// the whole measurement, so that a kernel that takes longer than its share
// says can be told apart from one that gets less than its share.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// options are the command's flags.
type options struct {
	kernel     string
	size, reps int
	cfg        runtime.Config
	criterion  string
	arrivals   time.Duration
	cpuProfile string // file for a CPU profile of the kernel's runs, if any
	sample     bool   // sample where the process's threads are queued
}

func main() {
	var o options
	flag.StringVar(&o.kernel, "kernel", "fib", "kernel to run at low priority")
	flag.IntVar(&o.size, "size", 0, "kernel size (0: its default)")
	flag.IntVar(&o.reps, "reps", 5, "runs of the kernel")
	flag.IntVar(&o.cfg.Procs, "procs", 2, "fairly's workers")
	flag.StringVar(&o.criterion, "criterion", "50-25-25", `"50-25-25" (a sink at medium priority beside the kernel) or "alone"`)
	flag.DurationVar(&o.arrivals, "arrivals", 0, "interval of top-priority thread.Run calls from an ordinary goroutine (0: none)")
	flag.BoolVar(&o.cfg.KeepGOMAXPROCS, "keep-gomaxprocs", false, "runtime.Config.KeepGOMAXPROCS: no spare Go P beside the workers")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurement (the kernel's runs and the checks between them) to this file")
	flag.BoolVar(&o.sample, "sample", true, "sample the process's threads every half millisecond (it costs processor time of its own)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "placement:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	k, err := kernels.Lookup(o.kernel)
	if err != nil {
		return err
	}
	if o.size == 0 {
		o.size = k.DefaultSize
	}
	if o.reps < 1 || o.arrivals < 0 {
		return fmt.Errorf("-reps must be at least 1 and -arrivals not negative")
	}
	ord := fairness.NewOrder()
	hi, mid, lo := ord.New("interactive"), ord.New("sink"), ord.New("kernel")
	_ = ord.Less(lo, mid) // fresh priorities: neither call can fail
	_ = ord.Less(mid, hi)
	shares := map[fairness.Priority]float64{hi: 50, mid: 25, lo: 25}
	switch o.criterion {
	case "50-25-25":
	case "alone":
		shares = map[fairness.Priority]float64{hi: 0, mid: 0, lo: 100}
	default:
		return fmt.Errorf("-criterion %q is neither 50-25-25 nor alone", o.criterion)
	}
	crit, err := fairness.NewCriterion(ord, shares)
	if err != nil {
		return err
	}
	o.cfg.Criterion = crit
	rt, err := runtime.New(o.cfg)
	if err != nil {
		return err
	}
	defer rt.Close()

	var sink *kernels.Sink // nil: none, already closed
	if o.criterion != "alone" {
		sink = kernels.StartSink(rt, mid) // fairbench's Table 1 sink
	}
	var stop atomic.Bool
	arrived := make(chan error, 1)
	go func() { // top-priority arrivals, if any
		var err error
		for o.arrivals > 0 && !stop.Load() && err == nil {
			time.Sleep(o.arrivals)
			_, err = thread.Run(rt, hi, func(*thread.Ctx) int { return kernels.FibSeq(10) })
		}
		arrived <- err
	}()
	halt := sync.OnceValue(func() error { // before Close, on every path
		stop.Store(true)
		return errors.Join(sink.Close(), <-arrived)
	})
	defer halt()

	inst := k.New(o.size)
	time.Sleep(100 * time.Millisecond) // let the sink spread
	samples := make(chan placement, 1)
	var running atomic.Bool // a kernel run is under way
	if o.sample {
		go sample(&stop, &running, samples)
	} else {
		samples <- placement{}
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	tot, err := measure(rt, lo, inst, o.reps, &running)
	if err != nil {
		return err
	}
	if err := halt(); err != nil {
		return err
	}
	pl := <-samples
	fmt.Printf("%s at %s, P=%d, GOMAXPROCS %d, arrivals every %v: kernel %v in %d runs\n", o.kernel, o.criterion, rt.Procs(), goruntime.GOMAXPROCS(0), o.arrivals, tot.wall.Round(time.Millisecond), o.reps)
	fmt.Printf("cores used %.2f; involuntary switches %d/s; seizures %d, rescues %d\n",
		tot.cpu.Seconds()/tot.wall.Seconds(), int(float64(tot.nivcsw)/tot.wall.Seconds()), tot.seizures, tot.rescues)
	fmt.Printf("kernel ran %v on the workers, %.3f of their time (its share %.2f)\n", tot.kernel.Round(time.Millisecond),
		float64(tot.kernel)/float64(tot.wall*time.Duration(rt.Procs())), shares[lo]/100)
	if pl.n > 0 {
		fmt.Printf("samples %d: runnable threads doubled up on one core while another ran none in %.1f%%\n", pl.n, 100*float64(pl.stacked)/float64(pl.n))
	}
	return nil
}

// placement counts samples of the process's runnable threads.
type placement struct{ n, stacked int }

// sample reads the state and core of every thread of the process every
// half millisecond while running, until stop, leaving out its own thread,
// and sends the counts.
func sample(stop, running *atomic.Bool, out chan<- placement) {
	goruntime.LockOSThread() // its own thread stays out of the counts
	self := strconv.Itoa(syscall.Gettid())
	cores := goruntime.NumCPU()
	var pl placement
	for !stop.Load() {
		time.Sleep(500 * time.Microsecond)
		if !running.Load() {
			continue
		}
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

// totals sum what the kernel's runs took.
type totals struct {
	wall, cpu, kernel time.Duration // kernel: the workers' time at its priority
	nivcsw            int64
	seizures, rescues uint64
}

// measure runs the kernel reps times at priority lo and checks each result,
// setting running during each run. Only the runs count, not the checks
// between them (bfs's takes a good part of a second on one core).
func measure(rt *runtime.Runtime, lo fairness.Priority, inst kernels.Instance, reps int, running *atomic.Bool) (totals, error) {
	var tot totals
	for i := range reps {
		st0 := rt.Stats()
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		running.Store(true)
		t := time.Now()
		err := kernels.RunFairly(rt, lo, inst)
		d := time.Since(t)
		running.Store(false)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		st1 := rt.Stats()
		if err == nil {
			err = inst.Check()
		}
		if err != nil {
			return tot, err
		}
		tot.wall += d
		tot.cpu += time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		tot.nivcsw += ru1.Nivcsw - ru0.Nivcsw
		tot.kernel += kernelCPU(st0, st1, lo)
		tot.seizures += st1.Seizures - st0.Seizures
		tot.rescues += st1.Rescues - st0.Rescues
		fmt.Printf("run %d: %v\n", i+1, d.Round(time.Millisecond))
	}
	return tot, nil
}

// kernelCPU is the workers' time spent at priority p between two Stats.
func kernelCPU(before, after runtime.Stats, p fairness.Priority) time.Duration {
	var d time.Duration
	for _, ps := range after.Priorities {
		if ps.Priority == p {
			d += ps.CPU
		}
	}
	for _, ps := range before.Priorities {
		if ps.Priority == p {
			d -= ps.CPU
		}
	}
	return d
}
