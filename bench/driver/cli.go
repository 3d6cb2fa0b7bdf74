package driver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/bench/trace"
)

// Main is the driver's command line; it returns the process exit code (2
// for bad usage). args exclude the program name. It writes the Result as
// JSON to -results (standard output by default in TCP mode).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: driver (-addr 127.0.0.1:PORT | -stdio) [-trace NAME|FILE | -script TEXT] [flags]\n\n"+
			"Replays an event trace against an echo server and prints every response time as JSON.\n"+
			"Built-in traces: %s.\n\n", strings.Join(trace.BuiltinNames(), ", "))
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "", "TCP address of the echo server (loopback only)")
	stdio := fs.Bool("stdio", false, "send requests on standard output and read echoes from standard input")
	traceName := fs.String("trace", "steady50", "built-in trace name or trace file")
	script := fs.String("script", "", "trace text, statements separated by ';' (overrides -trace)")
	conns := fs.Int("conns", 1, "TCP connections to spread requests over")
	grace := fs.Duration("grace", 2*time.Second, "how long to wait for echoes after the last request")
	timeout := fs.Duration("timeout", 0, "bound on the whole replay (default: trace length + grace + 10s)")
	results := fs.String("results", "-", "file for the JSON results ('-': standard output, TCP mode only)")
	stopOnEOF := fs.Bool("stop-on-eof", false, "TCP mode: stop sending when standard input ends")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "driver: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected arguments %q", fs.Args())
	case (*addr == "") == !*stdio:
		return usage("give exactly one of -addr and -stdio")
	case *stdio && *results == "-":
		return usage("-stdio uses standard output for requests: give -results FILE")
	case *stdio && *stopOnEOF:
		return usage("-stop-on-eof needs standard input, which -stdio uses for echoes")
	case *conns < 1:
		return usage("-conns must be at least 1")
	}
	tr, err := loadTrace(*traceName, *script)
	if err != nil {
		return usage("%v", err)
	}
	cfg := Config{Trace: tr, Addr: *addr, Conns: *conns, Grace: *grace, Timeout: *timeout}
	if *stdio {
		cfg.In, cfg.Out = stdin, stdout
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *stopOnEOF {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := writeResults(*results, stdout, res); err != nil {
		fmt.Fprintln(stderr, "driver: writing results:", err)
		return 1
	}
	return 0
}

// writeResults writes res as JSON to the file path, or to stdout for "-".
func writeResults(path string, stdout io.Writer, res *Result) error {
	if path == "-" {
		return json.NewEncoder(stdout).Encode(res)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(json.NewEncoder(f).Encode(res), f.Close())
}

// loadTrace reads the trace from script text, a built-in name or a file.
func loadTrace(name, script string) (*trace.Trace, error) {
	if script != "" {
		return trace.ParseString(script)
	}
	tr, err := trace.Builtin(name)
	if err == nil {
		return tr, nil
	}
	f, ferr := os.Open(name)
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	defer f.Close()
	return trace.Parse(f)
}
