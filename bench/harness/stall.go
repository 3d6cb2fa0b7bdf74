package harness

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/thread"
)

// The stall experiment: a network echo at high priority beside low-priority
// threads that spend all their time in library calls with no fairly call
// inside (no preemption point for tens or hundreds of milliseconds), one
// such thread per worker, criterion 50-0-50. Promptness must not depend on
// user code reaching preemption points.

const kindStall = "stall"

// stallLoad is a library call that never calls fairly.
type stallLoad struct {
	name string
	desc string
	// prepare makes the input of mib MiB once; call runs the library call on it.
	prepare func(mib int) any
	call    func(in any) int
}

var stallLoads = []stallLoad{
	{name: "idle", desc: "nothing: the echo alone"},
	{name: "sort", desc: "slices.Sort of 16Ki random int64 keys per MiB (1M by default)",
		prepare: func(mib int) any {
			r := rand.New(rand.NewPCG(1, 2))
			keys := make([]int64, mib<<14)
			for i := range keys {
				keys[i] = r.Int64()
			}
			return keys
		},
		call: func(in any) int {
			keys := slices.Clone(in.([]int64))
			slices.Sort(keys)
			return int(keys[0] & 1)
		}},
	{name: "flate", desc: "compress/flate (best speed) of the input",
		prepare: stallBytes,
		call: func(in any) int {
			zw, _ := flate.NewWriter(io.Discard, flate.BestSpeed)
			_, _ = zw.Write(in.([]byte))
			_ = zw.Close()
			return 0
		}},
	{name: "sha256", desc: "crypto/sha256 over the input",
		prepare: stallBytes,
		call: func(in any) int {
			s := sha256.Sum256(in.([]byte))
			return int(s[0] & 1)
		}},
}

// stallBytes is compressible text-like input, shared by the byte loads.
func stallBytes(mib int) any {
	r := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	words := []string{"fair", "prompt", "thread", "worker", "bank", "deal", "round", "share"}
	for b.Len() < mib<<20 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(" \n"[r.IntN(2)])
	}
	return b.Bytes()[:mib<<20]
}

func stallLoadNamed(name string) stallLoad {
	for _, l := range stallLoads {
		if l.name == name {
			return l
		}
	}
	panic("unknown stall load " + name)
}

// stall is a setting of the stall experiment: procs hogs running load (none
// for idle) while the driver replays the fixed trace against a network echo,
// on fairly (echo high, hogs low, 50-0-50) or on plain goroutines.
func (s *suite) stall(load stallLoad, sys string, procs int) (*Record, error) {
	rec := &Record{Kind: kindStall, Kernel: load.name, Procs: procs, System: sys}
	var in any
	if load.prepare != nil {
		key := fmt.Sprint(load.name, s.cfg.stallMiB())
		if in = s.stallIn[key]; in == nil {
			in = load.prepare(s.cfg.stallMiB())
			s.stallIn = map[string]any{key: in} // keep one input alive at a time
		}
	}
	var stop atomic.Bool
	var calls atomic.Int64
	hog := func() {
		for !stop.Load() {
			start := time.Now()
			load.call(in)
			calls.Add(1)
			rec.Times = append(rec.Times, time.Since(start)) // one hog records: see below
		}
	}
	finish := func(echo *netEcho, waitHogs func() error) error {
		_ = rec.measure(func() error { <-echo.drv.done; return nil })
		stop.Store(true)
		herr := waitHogs()
		return closeAll(herr, closeEcho(nil, echo, rec))
	}
	if sys == sysGoroutines || sys == sysTuned {
		goProcs := procs
		if sys == sysTuned {
			goProcs++ // a P for the network poller while the calls compute
		}
		_, err := withProcs(goProcs, func() (struct{}, error) {
			echo, err := s.cfg.startNetEcho(interactive.ServeNetGoroutines, s.cfg.fixedScript())
			if err != nil {
				return struct{}{}, err
			}
			var wg sync.WaitGroup
			if load.call != nil {
				for i := range procs {
					wg.Go(func() {
						if sys == sysTuned {
							// Locked for good: the goroutine ends locked, and
							// Go ends its demoted thread with it.
							goruntime.LockOSThread()
							idleThread()
						}
						if i == 0 {
							hog()
						} else {
							otherHog(&stop, load, in)
						}
					})
				}
			}
			return struct{}{}, finish(echo, func() error { wg.Wait(); return nil })
		})
		return rec, err
	}
	c := Criterion{50, 0, 50}
	rec.Criterion = c.String()
	p, rt, echo, err := s.echoOn(procs, c, s.cfg.fixedScript())
	if err != nil {
		return nil, err
	}
	var hs []*thread.Handle[struct{}]
	if load.call != nil {
		for i := range procs {
			hs = append(hs, thread.Go(rt, p.lo, func(*thread.Ctx) struct{} {
				if i == 0 {
					hog()
				} else {
					otherHog(&stop, load, in)
				}
				return struct{}{}
			}))
		}
	}
	err = finish(echo, func() error {
		for _, h := range hs {
			if _, err := h.Wait(); err != nil {
				return err
			}
		}
		return nil
	})
	return rec, closeAll(err, rt.Close())
}

// otherHog runs load like the recording hog, without recording.
func otherHog(stop *atomic.Bool, load stallLoad, in any) {
	for !stop.Load() {
		load.call(in)
	}
}

// stallSystems are the stall experiment's systems, in the order of its
// table and chart.
var stallSystems = []string{sysFairly, sysGoroutines, sysTuned}

func stallTable(res *Results) Section {
	t := table{head: append([]string{"library call", "P", "system", "call (ms)", "calls", "echo p50 (ms)", "p99 (ms)", "max (ms)", "answered"}, partsHead...)}
	for _, p := range res.Procs {
		for _, l := range stallLoads {
			for _, sys := range stallSystems {
				rec := res.find(Record{Kind: kindStall, Kernel: l.name, Procs: p, System: sys})
				if rec == nil {
					continue
				}
				call := "—"
				if len(rec.Times) > 0 {
					call = millis(rec)
				}
				row := []string{l.name, fmt.Sprint(p), sys, call, fmt.Sprint(len(rec.Times))}
				t.add(slices.Concat(row, latencyCells(rec), []string{answered(rec)}, partsCells(rec))...)
			}
		}
	}
	var loads []string
	for _, l := range stallLoads[1:] {
		loads = append(loads, l.name+": "+l.desc)
	}
	return Section{
		Title: "Stall: echo beside library code that never calls fairly",
		Text: fmt.Sprintf("P low-priority threads (goroutines) each repeat a library call with no preemption point inside while the driver replays %v of requests at %g/s "+
			"against a network echo at high priority, criterion 50-0-50; idle runs the echo alone. Input: %d MiB. Loads: %s. "+
			"The call time and count are one hog's. Goroutines: the same calls on plain goroutines (GOMAXPROCS = P) and a plain-Go echo; "+
			"goroutines, tuned: the best we know by hand for plain Go (each call's goroutine locked to its OS thread and that thread SCHED_IDLE, "+
			"GOMAXPROCS = P + 1; Linux), the floor this machine gives an echo beside such calls. ",
			res.EchoFor, res.EchoRate, res.StallMiB, joinLoads(loads)) + partsText,
		Table: t.String(),
		Chart: "stall.png",
		draw:  func(path string) error { return drawStall(res, path) },
	}
}

func joinLoads(l []string) string {
	var b bytes.Buffer
	for i, s := range l {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// drawStall plots the echo's response time per library call, one series
// per system and P: a point at the p99 with a bar from the p50 to the
// largest, and the 1 ms goal as a line.
func drawStall(res *Results, path string) error {
	p := logPlot(fmt.Sprintf("Stall: echo response beside library calls with no preemption point\n"+
		"point: p99, bar: p50 to max, of one replay of %v at %g requests/s", res.EchoFor, res.EchoRate),
		"library call repeated by each of the P low-priority threads (criterion 50-0-50)",
		"echo response time (ms, log scale)")
	var names []string
	for _, l := range stallLoads {
		names = append(names, l.name)
	}
	ys := []float64{1}
	i := 0
	for _, procs := range res.Procs {
		for _, sys := range stallSystems {
			var pts spreadPoints
			for x, l := range stallLoads {
				if lat := echoLatency(res.find(Record{Kind: kindStall, Kernel: l.name, Procs: procs, System: sys})); lat.N > 0 {
					pts.add(float64(x)+0.1*(float64(i)-1.5), lg(inMs(lat.P99)), lg(inMs(lat.P50)), lg(inMs(lat.Max)))
					ys = append(ys, inMs(lat.P50), inMs(lat.Max))
				}
			}
			if err := pts.draw(p, i, fmt.Sprintf("%s, P=%d", sys, procs)); err != nil {
				return err
			}
			if len(pts.XYs) > 0 {
				i++
			}
		}
	}
	return saveByName(p, names, ys, 7*vg.Inch, path)
}
