// Command httpserver is an HTTP server on fairly: its interactive endpoint
// answers promptly while heavy parallel computation runs in the same
// process, with no checkpoints in the code.
//
// Requests go through fairlyhttp.Handler, which runs each one as a fairly
// thread: /hash at the high priority "ui", /fib at the low priority
// "batch". With -background (the default) a batch thread also computes
// Fibonacci numbers in parallel for as long as the server runs, so the
// processors are always busy; the criterion gives ui -ui-share percent of
// them whenever it has work, and the rest to batch.
//
// Usage:
//
//	go run ./examples/httpserver                  # serve 127.0.0.1:8080 until interrupted
//	curl '127.0.0.1:8080/hash?text=hello'         # interactive: a SHA-256 chain, a fraction of a millisecond
//	curl '127.0.0.1:8080/fib?n=35'                # batch: parallel Fibonacci on the request's thread
//	curl '127.0.0.1:8080/stats'                   # processor time per priority so far
//
// Compare the answer times of /hash with and without -background: they
// stay about the same.
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairlyhttp"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Config describes the server.
type Config struct {
	Procs      int     // fairly workers (0: GOMAXPROCS)
	UIShare    float64 // percent of the processors owed to ui
	Background bool    // keep a batch computation running
	BgFib      int     // n of each background Fibonacci
}

// Bounds of the flags.
const (
	maxProcs = 256
	maxFib   = 45 // fib(45) takes seconds on two cores; beyond, minutes
	cutoff   = 20 // below it Fibonacci is computed sequentially
	hashIter = 2000
)

// run is the command without the process around it. It returns the exit
// code: 0 (also for -h), 2 after a mistake on the command line, 1 when the
// server fails; the error goes to stderr on a line that starts
// "httpserver: ".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, addr, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "httpserver: %v\nRun 'httpserver -h' for the flags.\n", err)
		return 2
	}
	if err := listenAndServe(ctx, cfg, addr, stdout); err != nil {
		fmt.Fprintf(stderr, "httpserver: %v\n", err)
		return 1
	}
	return 0
}

// parseFlags reads and checks the command line: the server's settings and
// the address to listen on.
func parseFlags(args []string, stderr io.Writer) (cfg Config, addr string, err error) {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints a mistake, once; -h prints the usage below
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: httpserver [flags]\n\nServes /hash (high priority), /fib?n=N (low priority) and /stats on fairly.\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.IntVar(&cfg.Procs, "procs", 0, fmt.Sprintf("fairly workers, 0 (GOMAXPROCS) to %d", maxProcs))
	fs.Float64Var(&cfg.UIShare, "ui-share", 50, "percent of the processors owed to /hash when it has work, 1 to 99")
	fs.BoolVar(&cfg.Background, "background", true, "compute Fibonacci at low priority for as long as the server runs")
	fs.IntVar(&cfg.BgFib, "bg-fib", 32, fmt.Sprintf("n of each background Fibonacci, %d to %d", cutoff, maxFib))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, addr, err
	}
	if fs.NArg() > 0 {
		return cfg, addr, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg, addr, errors.Join(between("procs", cfg.Procs, 0, maxProcs), between("ui-share", cfg.UIShare, 1, 99),
		between("bg-fib", cfg.BgFib, cutoff, maxFib))
}

// between checks that the value v of the flag name is in [lo, hi].
func between[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("-%s %v is not between %v and %v", name, v, lo, hi)
}

// listenAndServe serves on addr until ctx is done.
func listenAndServe(ctx context.Context, cfg Config, addr string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "httpserver: serving http://%s (/hash, /fib?n=N, /stats); interrupt to stop\n", ln.Addr())
	return Serve(ctx, cfg, ln)
}

// Serve serves on ln until ctx is done, then shuts the server down, stops
// the background computation and closes the runtime.
func Serve(ctx context.Context, cfg Config, ln net.Listener) error {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		return err
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: cfg.UIShare, batch: 100 - cfg.UIShare})
	if err != nil {
		return err
	}
	rt, err := runtime.New(runtime.Config{Procs: cfg.Procs, Criterion: crit})
	if err != nil {
		return err
	}
	var stop atomic.Bool
	var bgRuns atomic.Int64
	var bg *thread.Handle[struct{}]
	if cfg.Background {
		bg = thread.Go(rt, batch, func(c *thread.Ctx) struct{} {
			for !stop.Load() {
				fib(c, cfg.BgFib)
				bgRuns.Add(1)
			}
			return struct{}{}
		})
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hash", hash)
	mux.HandleFunc("GET /fib", fibHandler)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		for _, ps := range rt.Stats().Priorities {
			if ps.Priority == ui || ps.Priority == batch {
				fmt.Fprintf(w, "%s: %v of processor time (%.0f%%; owed %.0f%% when busy)\n",
					ps.Priority, ps.CPU.Round(time.Millisecond), 100*ps.CPUShare, 100*ps.Share)
			}
		}
		fmt.Fprintf(w, "background runs: %d\n", bgRuns.Load())
	})
	srv := &http.Server{
		Handler:           fairlyhttp.Handler(rt, mux, fairlyhttp.Default(ui), fairlyhttp.Route("/fib", batch)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if perr := <-served; !errors.Is(perr, http.ErrServerClosed) {
			err = errors.Join(err, perr)
		}
	}
	stop.Store(true)
	if bg != nil {
		_, berr := bg.Wait()
		err = errors.Join(err, berr)
	}
	return errors.Join(err, rt.Close())
}

// hash is the interactive endpoint: a chain of SHA-256 over the text.
func hash(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(r.URL.Query().Get("text")))
	for range hashIter - 1 {
		sum = sha256.Sum256(sum[:])
	}
	fmt.Fprintf(w, "%x\n", sum)
}

// fibHandler is the batch endpoint: fib(n), forked on the request's thread.
func fibHandler(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 || n > maxFib {
		http.Error(w, fmt.Sprintf("want /fib?n=N with N in 0..%d", maxFib), http.StatusBadRequest)
		return
	}
	fmt.Fprintln(w, fib(fairlyhttp.Thread(r), n))
}

// fib forks both calls above the cutoff: parallel work with no grain to
// tune and no checkpoints, since every fork is a preemption point.
func fib(c *thread.Ctx, n int) int {
	if n < cutoff {
		return fibSeq(n)
	}
	a, b := thread.Fork2(c, fib, n-1, n-2)
	return a + b
}

func fibSeq(n int) int {
	if n < 2 {
		return n
	}
	return fibSeq(n-1) + fibSeq(n-2)
}
