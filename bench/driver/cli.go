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

// Main is the driver's command line; it returns the process exit code (0
// for -h, 2 for bad usage). args exclude the program name. It writes the
// Result as JSON to -results (standard output by default in TCP mode).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	// The flag package would print its own message and the usage on a
	// mistake; usage below prints one line with the command's prefix.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: driver (-addr 127.0.0.1:PORT | -stdio) [-trace NAME|FILE | -script TEXT] [flags]\n\n"+
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
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "driver: "+format+"\nRun 'driver -h' for the usage and flags.\n", a...)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return 0
		}
		return usage("%v", err)
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
	case *conns < 1 || *conns > maxConns:
		return usage("-conns %d is not in 1..%d", *conns, maxConns)
	case *grace < 0:
		return usage("-grace %v is negative", *grace)
	case *timeout < 0:
		return usage("-timeout %v is negative", *timeout)
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

// maxConns bounds -conns: each connection is a socket and a goroutine.
const maxConns = 1024

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
	if tr, err := trace.Builtin(name); err == nil {
		return tr, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("-trace %q is neither a built-in trace (%s) nor a file that opens: %w",
			name, strings.Join(trace.BuiltinNames(), ", "), err)
	}
	defer f.Close()
	return trace.Parse(f)
}
