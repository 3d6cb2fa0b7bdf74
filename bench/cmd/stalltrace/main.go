// Command stalltrace shows what a fairbench prompt cell's process did while
// its slowest requests waited: it reads an execution trace that
// `fairbench -experiments prompt -prompt-trace DIR` kept for a slow cell,
// and the cell's list of slow requests beside it, and prints the window
// from just before the first request of the slowest cluster was sent to
// when its slowest request was answered:
//
//	go run ./bench/cmd/stalltrace DIR/sort-P1-50-0-50.trace
//
// The window opens with the slow requests in it (send time from the
// window's start, response time), then one line per event: time from the
// window's start in ms, the OS thread (M, its thread id on Linux), the P
// and the goroutine that emitted it, and the event: goroutine and P state
// changes with the reason and, for a goroutine that blocks or is readied,
// its first frame outside the runtime; stops of the world and collector
// phases; GOMAXPROCS. A goroutine that runs throughout shows no events.
// The window's bounds are also printed in seconds of CLOCK_MONOTONIC, the
// trace's clock on Linux, so that `perf sched record -k CLOCK_MONOTONIC`
// of the same run (`perf sched timehist`) tells what ran on each core then.
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/fairlyprompt/fairly/bench/harness"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stalltrace:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("stalltrace", flag.ContinueOnError)
	pre := fs.Duration("pre", 2*time.Millisecond, "how long before the cluster's first request the window opens")
	req := fs.Int("req", -1, "the request whose cluster to show, by its index (default: the slowest)")
	maxLines := fs.Int("lines", 400, "most events printed")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stalltrace [flags] DIR/<cell>.trace")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !strings.HasSuffix(fs.Arg(0), ".trace") {
		fs.Usage()
		return errors.New("give one .trace file that fairbench -prompt-trace kept")
	}
	name := fs.Arg(0)
	reqs, err := readSlow(strings.TrimSuffix(name, ".trace") + ".slow")
	if err != nil {
		return err
	}
	c, err := clusterOf(reqs, *req)
	if err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return show(bufio.NewReader(f), out, reqs, c, *pre, *maxLines)
}

// slowReq is a line of a .slow file.
type slowReq struct {
	index      int
	sent, took int64 // Unix ns, ns
}

func readSlow(name string) ([]slowReq, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var reqs []slowReq
	for n, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var r slowReq
		var errs [3]error
		if len(f) == 3 {
			r.index, errs[0] = strconv.Atoi(f[0])
			r.sent, errs[1] = strconv.ParseInt(f[1], 10, 64)
			r.took, errs[2] = strconv.ParseInt(f[2], 10, 64)
		}
		if len(f) != 3 || errors.Join(errs[:]...) != nil {
			return nil, fmt.Errorf("%s:%d: not \"index sent response\": %q", name, n+1, line)
		}
		reqs = append(reqs, r)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s lists no slow request", name)
	}
	return reqs, nil
}

// cluster is a span of wall time: from the first send of a run of slow
// requests to the latest answer among them.
type cluster struct{ from, to int64 }

// clusterOf is the cluster of request index (the slowest request if
// index < 0): the slow requests sent within 100 ms before it, and it.
func clusterOf(reqs []slowReq, index int) (cluster, error) {
	var w slowReq
	if index < 0 {
		w = slices.MaxFunc(reqs, func(a, b slowReq) int { return cmp.Compare(a.took, b.took) })
	} else if i := slices.IndexFunc(reqs, func(r slowReq) bool { return r.index == index }); i >= 0 {
		w = reqs[i]
	} else {
		return cluster{}, fmt.Errorf("request %d is not among the slow ones", index)
	}
	c := cluster{w.sent, w.sent + w.took}
	for _, r := range reqs {
		if r.sent < w.sent && w.sent-r.sent < int64(100*time.Millisecond) {
			c.from = min(c.from, r.sent)
			c.to = max(c.to, r.sent+r.took)
		}
	}
	return c, nil
}

// show prints the window of cluster c from the trace in r.
func show(r io.Reader, out io.Writer, reqs []slowReq, c cluster, pre time.Duration, maxLines int) error {
	tr, err := trace.NewReader(r)
	if err != nil {
		return err
	}
	var off, t0, t1 int64 // off: wall minus trace time
	lines := 0
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if off == 0 {
			if ev.Kind() == trace.EventLog && ev.Log().Category == harness.TraceWallCategory {
				wall, err := strconv.ParseInt(ev.Log().Message, 10, 64)
				if err != nil {
					return fmt.Errorf("the trace's wall clock: %w", err)
				}
				off = wall - int64(ev.Time())
				t0, t1 = c.from-off-int64(pre), c.to-off
				header(out, reqs, c, off, t0, t1)
			}
			continue
		}
		t := int64(ev.Time())
		if t > t1 {
			break
		}
		if t < t0 {
			continue
		}
		s := describe(ev)
		if s == "" {
			continue
		}
		if lines == maxLines {
			fmt.Fprintln(out, "... (-lines)")
			break
		}
		lines++
		fmt.Fprintf(out, "%8.3f M%-7d P%-3d G%-7d %s\n", float64(t-t0)/1e6, ev.Thread(), ev.Proc(), ev.Goroutine(), s)
	}
	if off == 0 {
		return errors.New("the trace has no wall clock event: not one that fairbench -prompt-trace wrote")
	}
	return nil
}

func header(out io.Writer, reqs []slowReq, c cluster, off, t0, t1 int64) {
	fmt.Fprintf(out, "window %.3f ms, CLOCK_MONOTONIC %.6f to %.6f s; slow requests in it:\n", float64(t1-t0)/1e6, float64(t0)/1e9, float64(t1)/1e9)
	for _, r := range reqs {
		if at := r.sent - off; at >= t0 && at <= t1 {
			fmt.Fprintf(out, "  request %d sent at %.3f ms, answered in %.3f ms\n", r.index, float64(at-t0)/1e6, float64(r.took)/1e6)
		}
	}
}

// describe is an event's line, or "" for events the window leaves out.
func describe(ev trace.Event) string {
	switch ev.Kind() {
	case trace.EventRangeBegin, trace.EventRangeEnd:
		verb := "begins"
		if ev.Kind() == trace.EventRangeEnd {
			verb = "ends"
		}
		return ev.Range().Name + " " + verb
	case trace.EventMetric:
		if m := ev.Metric(); strings.Contains(m.Name, "gomaxprocs") {
			return fmt.Sprintf("GOMAXPROCS %d", m.Value.Uint64())
		}
	case trace.EventStateTransition:
		st := ev.StateTransition()
		switch st.Resource.Kind {
		case trace.ResourceGoroutine:
			from, to := st.Goroutine()
			s := fmt.Sprintf("G%d %v -> %v", st.Resource.Goroutine(), from, to)
			if st.Reason != "" {
				s += " (" + st.Reason + ")"
			}
			if to == trace.GoWaiting || to == trace.GoRunnable {
				if fn := firstOwnFrame(st.Stack); fn != "" {
					s += " at " + fn
				}
			}
			return s
		case trace.ResourceProc:
			from, to := st.Proc()
			return fmt.Sprintf("P%d %v -> %v", st.Resource.Proc(), from, to)
		}
	}
	return ""
}

// firstOwnFrame is the innermost frame of stk outside Go's runtime and
// standard synchronisation, the code that blocked or yielded.
func firstOwnFrame(stk trace.Stack) string {
	for f := range stk.Frames() {
		if !strings.HasPrefix(f.Func, "runtime.") && !strings.HasPrefix(f.Func, "internal/") && !strings.HasPrefix(f.Func, "sync.") && !strings.HasPrefix(f.Func, "sync/") {
			return f.Func
		}
	}
	return ""
}
