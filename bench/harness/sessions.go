package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// prios are the three priorities of every fairly run: the interactive
// kernel's, the time sink's and the compute kernel's, in that order.
type prios struct {
	o           *fairness.Order
	hi, mid, lo fairness.Priority
}

func newPrios() prios {
	o := fairness.NewOrder()
	p := prios{o: o, hi: o.New("interactive"), mid: o.New("sink"), lo: o.New("kernel")}
	// The three are fresh priorities of o, so neither call can fail.
	_ = o.Less(p.lo, p.mid)
	_ = o.Less(p.mid, p.hi)
	return p
}

// shares picks the processor shares of p's priorities out of st.
func (p prios) shares(st runtime.Stats) *CPUShares {
	out := &CPUShares{}
	for _, ps := range st.Priorities {
		switch ps.Priority {
		case p.hi:
			out.High = ps.CPUShare
		case p.mid:
			out.Medium = ps.CPUShare
		case p.lo:
			out.Low = ps.CPUShare
		}
	}
	return out
}

// runtime starts a runtime of procs workers with criterion c over p. A zero
// share leaves a priority only what the others do not use.
func (p prios) runtime(procs int, c Criterion) (*runtime.Runtime, error) {
	crit, err := fairness.NewCriterion(p.o, map[fairness.Priority]float64{p.hi: c[0], p.mid: c[1], p.lo: c[2]})
	if err != nil {
		return nil, err
	}
	return runtime.New(runtime.Config{Procs: procs, Criterion: crit})
}

// timed runs one version of a kernel instance and checks its result.
func timed(inst kernels.Instance, run func() error) (time.Duration, error) {
	start := time.Now()
	err := run()
	d := time.Since(start)
	if err == nil {
		err = inst.Check()
	}
	return d, err
}

func seqRun(inst kernels.Instance) (time.Duration, error) {
	return timed(inst, func() error { inst.Seq(); return nil })
}

func goroutinesRun(inst kernels.Instance) (time.Duration, error) {
	return timed(inst, func() error { inst.Goroutines(); return nil })
}

func fairlyRun(rt *runtime.Runtime, p fairness.Priority, inst kernels.Instance) (time.Duration, error) {
	return versionRun(rt, p, inst, inst.Fairly)
}

// fineRun times the fine-grained fairly version of inst.
func fineRun(rt *runtime.Runtime, p fairness.Priority, inst kernels.FineInstance) (time.Duration, error) {
	return versionRun(rt, p, inst, inst.Fine)
}

// versionRun times version, a fairly version of inst, as a thread at p.
func versionRun(rt *runtime.Runtime, p fairness.Priority, inst kernels.Instance, version func(*thread.Ctx)) (time.Duration, error) {
	return timed(inst, func() error { return kernels.RunVersion(rt, p, version) })
}

// repeat runs a measurement n times.
func repeat(n int, run func() (time.Duration, error)) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		d, err := run()
		if err != nil {
			return times, err
		}
		times = append(times, d)
	}
	return times, nil
}

// repeatPaired runs n pairs of measurements, seq right before run each
// time, and gives the times of run and of seq, a pair at the same index.
func repeatPaired(n int, seq, run func() (time.Duration, error)) (times, seqTimes []time.Duration, err error) {
	times, seqTimes = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for range n {
		s, err := seq()
		if err != nil {
			return times, seqTimes, err
		}
		d, err := run()
		if err != nil {
			return times, seqTimes, err
		}
		times, seqTimes = append(times, d), append(seqTimes, s)
	}
	return times, seqTimes, nil
}

// until repeats run until done is closed, at least once.
func until(done <-chan struct{}, run func() (time.Duration, error)) ([]time.Duration, error) {
	var times []time.Duration
	for {
		d, err := run()
		if err != nil {
			return times, err
		}
		times = append(times, d)
		select {
		case <-done:
			return times, nil
		default:
		}
	}
}

// withProcs runs f with GOMAXPROCS set to procs, as a plain Go program
// given procs processors would run.
func withProcs[T any](procs int, f func() (T, error)) (T, error) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
	return f()
}

// driverProc is a running driver process.
type driverProc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser // TCP mode: closing it stops an open-ended replay
	stdout, stderr bytes.Buffer
	results        string // stream mode: the results file
	done           chan struct{}
	err            error // of the process, once done
}

// graceArgs adds EchoGrace to a driver's arguments when it is set.
func (cfg *Config) graceArgs(args ...string) []string {
	if cfg.EchoGrace > 0 {
		args = append(args, "-grace", cfg.EchoGrace.String())
	}
	return args
}

// startTCPDriver starts a driver replaying script against addr over conns
// connections. An open-ended replay runs until stop.
func (cfg *Config) startTCPDriver(addr, script string, conns int) (*driverProc, error) {
	args := cfg.graceArgs("-addr", addr, "-script", script, "-stop-on-eof", "-results", "-", "-conns", strconv.Itoa(max(1, conns)))
	d := &driverProc{cmd: cfg.Driver(args...), done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, &d.stderr
	var err error
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	return d, d.start()
}

// startStreamDriver starts a driver replaying script over pipes: it
// returns the driver and the ends the server reads requests from and
// writes echoes to, which the caller must close.
func (cfg *Config) startStreamDriver(dir, script string) (*driverProc, *os.File, *os.File, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	echoR, echoW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, nil, nil, err
	}
	d := &driverProc{results: filepath.Join(dir, "driver.json"), done: make(chan struct{})}
	d.cmd = cfg.Driver(cfg.graceArgs("-stdio", "-script", script, "-results", d.results)...)
	d.cmd.Stdin, d.cmd.Stdout, d.cmd.Stderr = echoR, reqW, &d.stderr
	err = d.start()
	echoR.Close() // the child holds its own copies
	reqW.Close()
	if err != nil {
		reqR.Close()
		echoW.Close()
		return nil, nil, nil, err
	}
	return d, reqR, echoW, nil
}

func (d *driverProc) start() error {
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("starting the driver: %w", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	return nil
}

// finish stops an open-ended replay, waits for the driver and returns what
// it measured.
func (d *driverProc) finish() (*driver.Result, error) {
	if d.stdin != nil {
		d.stdin.Close()
	}
	<-d.done
	if d.err != nil {
		return nil, fmt.Errorf("driver: %w: %s", d.err, bytes.TrimSpace(d.stderr.Bytes()))
	}
	data := d.stdout.Bytes()
	if d.results != "" {
		var err error
		if data, err = os.ReadFile(d.results); err != nil {
			return nil, err
		}
	}
	var res driver.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("driver results: %w", err)
	}
	return &res, nil
}

// netEcho is a network echo with a driver talking to it.
type netEcho struct {
	srv   *interactive.Server
	drv   *driverProc
	dumps string // Config.DumpDir
}

// startNetEcho serves a network echo with serve and starts a driver on it;
// it returns once the driver is connected and its first request, sent after
// the pause settle, has been answered, so that what the caller starts next
// runs while the requests come, however short it is.
func (cfg *Config) startNetEcho(serve func(net.Listener) *interactive.Server, script string) (*netEcho, error) {
	return cfg.startNetEchoConns(serve, script, 1)
}

// startNetEchoConns is startNetEcho with the driver's requests dealt to
// conns connections in turn.
func (cfg *Config) startNetEchoConns(serve func(net.Listener) *interactive.Server, script string, conns int) (*netEcho, error) {
	ln, err := interactive.Listen()
	if err != nil {
		return nil, err
	}
	e := &netEcho{srv: serve(ln), dumps: cfg.DumpDir}
	if e.drv, err = cfg.startTCPDriver(ln.Addr().String(), script, conns); err != nil {
		return nil, errors.Join(err, e.srv.Close())
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, step := range []struct {
		done func() bool
		what string
	}{
		{func() bool { return e.srv.Accepted() > 0 }, "connect"},
		{func() bool { return len(e.srv.Timings()) > 0 }, "get its first echo"},
	} {
		for !step.done() {
			select {
			case <-e.drv.done:
				_, err := e.finish()
				return nil, fmt.Errorf("driver ended before it could %s: %w", step.what, err)
			case <-time.After(time.Millisecond):
			}
			if time.Now().After(deadline) {
				_, err := e.finish()
				return nil, errors.Join(fmt.Errorf("driver did not %s within 30s", step.what), err)
			}
		}
	}
	return e, nil
}

// finish stops the driver, then the server, and returns what the driver
// measured.
func (e *netEcho) finish() (*driver.Result, error) {
	res, err := e.drv.finish()
	if res != nil && res.Received < res.Sent && e.dumps != "" {
		dumpGoroutines(e.dumps, res) // while the server's threads still wait where they are stuck
	}
	return res, errors.Join(err, e.srv.Close())
}

// dumpGoroutines writes the stacks of every goroutine of the process to a
// new file in dir, for a replay whose requests went unanswered: the
// echo's thread and the runtime's goroutines show where they wait.
func dumpGoroutines(dir string, res *driver.Result) {
	err := os.MkdirAll(dir, 0o755)
	var f *os.File
	if err == nil {
		f, err = os.CreateTemp(dir, "unanswered-*.txt")
	}
	if err != nil {
		slog.Warn("fairbench: requests unanswered; no goroutine dump", "sent", res.Sent, "received", res.Received, "err", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d of %d requests unanswered: %s\n\n", res.Sent-res.Received, res.Sent, res.Stopped)
	// runtime.Stack, not pprof.Lookup: a binary that links pprof's profile
	// writers has heap profiling on (runtime.MemProfileRate), and its
	// sampling raised the echo's tail beside coarse-grained fib two to four
	// times (docs/tuning.md).
	buf := make([]byte, 1<<20)
	for n := goruntime.Stack(buf, true); ; n = goruntime.Stack(buf, true) {
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	_, err = f.Write(buf)
	slog.Warn("fairbench: requests unanswered; goroutines dumped", "sent", res.Sent, "received", res.Received, "file", f.Name(), "err", err)
}

// settle is the pause with which every replay starts. Starting the driver
// leaves a goroutine of this process in a blocking system call (os/exec's
// wait for the child), and Go lets that call keep its P until the system
// monitor takes it back, up to 10 ms and more when nothing else makes the
// monitor look: while the workers compute, that P is the spare one that
// wakes the echo, so a request sent at once waited milliseconds for the
// network poller in most Table 3 runs: the harness's doing, not the
// server's. docs/tuning.md ("Procs: how many workers") says what a program
// with such calls beside fairly can do.
const settle = 50 * time.Millisecond

// openScript is the trace of a replay that lasts until stopped.
func (cfg *Config) openScript() string {
	return fmt.Sprintf("pause %v; payload 64; rate %g/s for 30m", settle, cfg.EchoRate)
}

// fixedScript is the trace of a replay of cfg.EchoFor.
func (cfg *Config) fixedScript() string {
	return fmt.Sprintf("pause %v; payload 64; rate %g/s for %v", settle, cfg.EchoRate, cfg.EchoFor)
}
