// Command echo runs a terminal or network echo server on fairly, and on
// request drives it with a built-in client that prints response times.
//
// The server's threads run at a high priority: a listener thread, and a
// thread per connection that reads lines with thread.Await, so that an idle
// connection holds no worker. With -load, Fibonacci computations at a low
// priority keep every worker busy meanwhile; the criterion gives each
// priority half of the machine, and because the echo threads rarely have
// work, their half is donated to the computation until a line arrives.
// With -goroutines the same server and load run on plain goroutines.
//
// Usage:
//
//	go run ./examples/echo                      # net mode, 400 requests at 50/s, stats
//	go run ./examples/echo -load                # the same under background compute
//	go run ./examples/echo -load -goroutines    # ... on plain goroutines
//	go run ./examples/echo -mode term           # terminal echo through a pipe
//	go run ./examples/echo -client=false        # serve 127.0.0.1:7007 (or stdin) until interrupted
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Config describes one run of the echo example.
type Config struct {
	Mode       string // "net" or "term"
	Goroutines bool   // plain goroutines instead of fairly
	Load       bool   // background Fibonacci at low priority
	Client     bool   // drive the server with the built-in client
	Requests   int    // requests the client sends
	Rate       float64
	Conns      int // client connections in net mode
	Procs      int
	Fib        int // size of each background computation
	Cutoff     int // fork above this size (0: at every call)
	Addr       string
}

// Report is what a client run measured.
type Report struct {
	latency.Summary                // nearest-rank percentiles, as fairbench's tables quote them
	LoadRuns        int            // background computations finished
	Stats           *runtime.Stats // nil on goroutines
}

// ErrBadMode is returned for a -mode other than net or term.
var ErrBadMode = errors.New("-mode must be net or term")

// Bounds of the flags.
const (
	maxProcs    = 256
	maxRequests = 1_000_000
	maxRate     = 10_000
	maxConns    = 1024
	maxFib      = 50
)

// run is the command without the process around it. It returns the exit
// code: 0 (also for -h), 2 after a mistake on the command line, 1 when the
// run fails; the error goes to stderr on a line that starts "echo: ".
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "echo: %v\nRun 'echo -h' for the flags.\n", err)
		return 2
	}
	if err := execute(ctx, cfg, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "echo: %v\n", err)
		return 1
	}
	return 0
}

// parseFlags reads and checks the command line.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints a mistake, once; -h prints the usage below
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: echo [flags]\n\n"+
			"Runs an echo server on fairly (or plain goroutines) and, by default, drives it with a client\n"+
			"that prints response times; -load adds background computation.\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Mode, "mode", "net", "net (TCP on 127.0.0.1) or term (lines on a pipe or stdin)")
	fs.BoolVar(&cfg.Goroutines, "goroutines", false, "run the server and load on plain goroutines instead of fairly")
	fs.BoolVar(&cfg.Load, "load", false, "add background Fibonacci computations at low priority")
	fs.BoolVar(&cfg.Client, "client", true, "drive the server with the built-in client and print latencies; false: serve until interrupted")
	fs.IntVar(&cfg.Requests, "requests", 400, fmt.Sprintf("requests the client sends, 1 to %d", maxRequests))
	fs.Float64Var(&cfg.Rate, "rate", 50, fmt.Sprintf("requests per second, 0.1 to %d", maxRate))
	fs.IntVar(&cfg.Conns, "conns", 2, fmt.Sprintf("client connections (net mode), 1 to %d", maxConns))
	fs.IntVar(&cfg.Procs, "procs", 0, fmt.Sprintf("fairly workers, 0 to %d (0 = GOMAXPROCS)", maxProcs))
	fs.IntVar(&cfg.Fib, "fib", 30, fmt.Sprintf("size of each background Fibonacci computation, 1 to %d", maxFib))
	fs.IntVar(&cfg.Cutoff, "cutoff", 12, fmt.Sprintf("fork Fibonacci calls above this size, 0 to %d (0 = at every call)", maxFib))
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7007", "address to serve on with -client=false")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.Mode != "net" && cfg.Mode != "term" {
		return cfg, fmt.Errorf("%w, not %q", ErrBadMode, cfg.Mode)
	}
	if cfg.Addr == "" {
		return cfg, errors.New("-addr is empty")
	}
	return cfg, errors.Join(
		between("requests", cfg.Requests, 1, maxRequests),
		between("rate", cfg.Rate, 0.1, maxRate),
		between("conns", cfg.Conns, 1, maxConns),
		between("procs", cfg.Procs, 0, maxProcs),
		between("fib", cfg.Fib, 1, maxFib),
		between("cutoff", cfg.Cutoff, 0, maxFib),
	)
}

// between checks that the value v of the flag name is in [lo, hi].
func between[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("-%s %v is not between %v and %v", name, v, lo, hi)
}

// execute serves, or benchmarks the server with the built-in client.
func execute(ctx context.Context, cfg Config, stdin io.Reader, out io.Writer) error {
	if !cfg.Client {
		return serve(ctx, cfg, stdin, out)
	}
	rep, err := Bench(cfg)
	if err != nil {
		return err
	}
	kind := "fairly"
	if cfg.Goroutines {
		kind = "goroutines"
	}
	load := "no load"
	if cfg.Load {
		load = fmt.Sprintf("fib(%d) load, cutoff %d: %d computations finished", cfg.Fib, cfg.Cutoff, rep.LoadRuns)
	}
	fmt.Fprintf(out, "%s echo on %s, %s\n%v\n", cfg.Mode, kind, load, line(rep.Summary))
	if rep.Stats != nil {
		for _, p := range rep.Stats.Priorities {
			if p.CPU > 0 {
				fmt.Fprintf(out, "  %-6v share %3.0f%%, ran %5.1f%% of the CPU time\n", p.Priority, 100*p.Share, 100*p.CPUShare)
			}
		}
	}
	return nil
}

// setup builds the server cfg asks for; close releases it.
func setup(cfg Config) (srv server, close func() error, err error) {
	if cfg.Goroutines {
		return goServer{}, func() error { return nil }, nil
	}
	o := fairness.NewOrder()
	hi, lo := o.New("echo"), o.New("compute")
	if err := o.Less(lo, hi); err != nil {
		return nil, nil, err
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, lo: 50})
	if err != nil {
		return nil, nil, err
	}
	rt, err := runtime.New(runtime.Config{Procs: cfg.Procs, Criterion: crit})
	if err != nil {
		return nil, nil, err
	}
	return &fairlyServer{rt: rt, hi: hi, lo: lo}, rt.Close, nil
}

// Bench starts the server, drives it with the built-in client on
// 127.0.0.1 (net) or a pipe (term), and stops everything.
func Bench(cfg Config) (rep Report, err error) {
	srv, closeSrv, err := setup(cfg)
	if err != nil {
		return rep, err
	}
	defer func() {
		if fs, ok := srv.(*fairlyServer); ok {
			s := fs.rt.Stats()
			rep.Stats = &s
		}
		if errC := closeSrv(); err == nil {
			err = errC
		}
	}()
	stopLoad := make(chan struct{})
	waitLoad := func() (int, error) { return 0, nil }
	if cfg.Load {
		waitLoad = srv.startLoad(cfg.Fib, cfg.Cutoff, stopLoad)
		time.Sleep(50 * time.Millisecond) // let the load fill the workers
	}
	var lat []time.Duration
	switch cfg.Mode {
	case "net":
		lat, err = benchNet(srv, cfg)
	case "term":
		lat, err = benchTerm(srv, cfg)
	default:
		err = ErrBadMode
	}
	close(stopLoad)
	runs, errL := waitLoad()
	if err == nil {
		err = errL
	}
	return Report{Summary: latency.Of(lat, 0), LoadRuns: runs}, err
}

func benchNet(srv server, cfg Config) ([]time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // the client talks to this machine only
	if err != nil {
		return nil, err
	}
	wait := srv.serveNet(ln)
	streams := make([]io.ReadWriter, max(1, cfg.Conns))
	for i := range streams {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			ln.Close()
			return nil, errors.Join(err, wait())
		}
		defer conn.Close()
		streams[i] = conn
	}
	lat, err := driveAll(streams, cfg.Requests, cfg.Rate)
	ln.Close()
	return lat, errors.Join(err, wait())
}

// pipeRW is the client's end of the terminal: it writes the server's input
// and reads its output.
type pipeRW struct {
	io.Reader
	io.Writer
}

func benchTerm(srv server, cfg Config) ([]time.Duration, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	defer outR.Close()
	wait := srv.serveTerm(inR, outW)
	lat, err := drive(pipeRW{outR, inW}, cfg.Requests, cfg.Rate, 0)
	inW.Close() // the server sees the end of its input and returns
	errW := wait()
	inR.Close()
	outW.Close()
	return lat, errors.Join(err, errW)
}

// serve runs the server until ctx ends (net) or stdin ends (term).
func serve(ctx context.Context, cfg Config, stdin io.Reader, out io.Writer) error {
	srv, closeSrv, err := setup(cfg)
	if err != nil {
		return err
	}
	defer closeSrv()
	if cfg.Load {
		// Deferred calls run last first: stop the load, wait for it, close.
		stopLoad := make(chan struct{})
		defer srv.startLoad(cfg.Fib, cfg.Cutoff, stopLoad)()
		defer close(stopLoad)
	}
	if cfg.Mode == "term" {
		return srv.serveTerm(stdin, out)()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "echo: serving on %s; interrupt to stop\n", ln.Addr())
	wait := srv.serveNet(ln)
	<-ctx.Done()
	ln.Close()
	return wait()
}
