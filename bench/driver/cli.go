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
	"github.com/fairlyprompt/fairly/internal/cli"
)

// Main is the driver's command line; it returns the process exit code
// (see cli.Main: 0, 1 when the replay fails, 2 for bad usage). args exclude
// the program name. It writes the Result as JSON to -results (standard
// output by default in TCP mode). "driver http ..." is the HTTP load
// instead (see RunHTTP).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "http" {
		return mainHTTP(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
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
	conns := fs.Int("conns", 1, fmt.Sprintf("TCP connections to spread requests over, 1 to %d", maxConns))
	grace := fs.Duration("grace", 2*time.Second, "how long to wait for echoes after the last request")
	timeout := fs.Duration("timeout", 0, "bound on the whole replay (default: trace length + grace + 10s)")
	results := fs.String("results", "-", "file for the JSON results ('-': standard output, TCP mode only)")
	stopOnEOF := fs.Bool("stop-on-eof", false, "TCP mode: stop sending when standard input ends")
	var cfg Config
	parse := func() error {
		if err := cli.Parse(fs, args, stderr); err != nil {
			return err
		}
		switch {
		case (*addr == "") == !*stdio:
			return errors.New("give exactly one of -addr and -stdio")
		case *stdio && *results == "-":
			return errors.New("-stdio uses standard output for requests: give -results FILE")
		case *stdio && *stopOnEOF:
			return errors.New("-stop-on-eof needs standard input, which -stdio uses for echoes")
		}
		if err := cli.First(cli.Between("conns", *conns, 1, maxConns),
			cli.Between("grace", *grace, 0, time.Hour), cli.Between("timeout", *timeout, 0, 24*time.Hour)); err != nil {
			return err
		}
		tr, err := loadTrace(*traceName, *script)
		cfg = Config{Trace: tr, Addr: *addr, Conns: *conns, Grace: *grace, Timeout: *timeout}
		return err
	}
	run := func() error {
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
			return err
		}
		if err := writeResults(*results, stdout, res); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		return nil
	}
	return cli.Main("driver", stderr, parse, run)
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
