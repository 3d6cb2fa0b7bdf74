package driver

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/fairlyprompt/fairly/internal/cli"
)

// HTTPConfig describes an open-loop HTTP load: GET requests to one URL at a
// fixed rate.
type HTTPConfig struct {
	// URL is requested with GET; its host must be on loopback.
	URL string
	// Rate is the number of requests per second.
	Rate float64
	// For is how long requests are sent.
	For time.Duration
	// Timeout bounds each request (default 10 s); a request not answered by
	// then counts as lost.
	Timeout time.Duration
}

// Bounds of an HTTPConfig.
const (
	MaxHTTPRate = 10_000
	MaxHTTPFor  = time.Hour
)

// RunHTTP sends cfg's requests with vegeta's attacker, which sends each at
// its time on the schedule whatever the state of earlier ones: it starts
// more workers (and connections) rather than wait for answers, so a slow
// answer delays no later request (open loop, no coordinated omission).
// Result.RTT holds, for each answered request in the order of the
// schedule, the time from its sending to the end of its response, as the
// TCP driver measures; Result.MaxLag is the largest delay of a sending
// behind the schedule, the driver's own lateness. A request answered with a
// status other than 200 OK, or not at all, counts as lost and the first
// failure is in Result.Stopped.
func RunHTTP(ctx context.Context, cfg HTTPConfig) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	client := &http.Client{
		Timeout: cfg.Timeout,
		// Enough idle connections that an open-loop burst keeps them for the
		// next one, rather than paying a TCP handshake per request.
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true},
	}
	defer client.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(client))
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: cfg.URL})
	start := time.Now()
	results := atk.Attack(targeter, vegeta.ConstantPacer{Freq: 1, Per: interval}, cfg.For, "fairbench")
	res := &Result{Mode: "http", Requests: int(cfg.For / interval)}
	rtt := make([]time.Duration, 0, res.Requests)
	seqs := make([]uint64, 0, res.Requests)
	var failure string
	for done := ctx.Done(); ; {
		select {
		case r, ok := <-results:
			if !ok {
				res.Elapsed = time.Since(start)
				return res.finishHTTP(seqs, rtt, failure), nil
			}
			res.Sent++
			// vegeta's constant pacer schedules request k at (k+1) intervals.
			due := start.Add(time.Duration(r.Seq+1) * interval)
			res.MaxLag = max(res.MaxLag, r.Timestamp.Sub(due))
			if r.Code != http.StatusOK || r.Error != "" {
				if failure == "" {
					failure = fmt.Sprintf("request %d: status %d %s", r.Seq, r.Code, r.Error)
				}
				continue
			}
			seqs = append(seqs, r.Seq)
			rtt = append(rtt, r.Latency)
		case <-done:
			atk.Stop() // the results channel closes once the requests under way end
			done = nil
			failure = "stopped by the caller"
		}
	}
}

// finishHTTP puts the response times in the order of the schedule (they
// arrive in the order of completion) and counts the losses.
func (res *Result) finishHTTP(seqs []uint64, rtt []time.Duration, failure string) *Result {
	res.RTT = make([]time.Duration, len(rtt))
	order := make([]int, res.Sent)
	for i := range order {
		order[i] = -1
	}
	for i, s := range seqs {
		if s < uint64(len(order)) {
			order[s] = i
		}
	}
	n := 0
	for _, i := range order {
		if i >= 0 {
			res.RTT[n] = rtt[i]
			n++
		}
	}
	res.RTT = res.RTT[:n]
	res.Received = n
	if lost := res.Sent - n; lost > 0 {
		res.Stopped = fmt.Sprintf("%d of %d requests failed; first: %s", lost, res.Sent, failure)
	} else if failure != "" {
		res.Stopped = failure
	}
	return res
}

// check validates cfg; its messages name the quantity and its bounds.
func (cfg HTTPConfig) check() error {
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil:
		return fmt.Errorf("URL %q: %w", cfg.URL, err)
	case u.Scheme != "http":
		return fmt.Errorf("URL %q is not http://", cfg.URL)
	case !(cfg.Rate > 0 && cfg.Rate <= MaxHTTPRate):
		return fmt.Errorf("rate %v is not in (0, %d] requests per second", cfg.Rate, MaxHTTPRate)
	case cfg.For <= 0 || cfg.For > MaxHTTPFor:
		return fmt.Errorf("length %v is not in (0, %v]", cfg.For, MaxHTTPFor)
	}
	return checkLoopback(u.Host)
}

// checkLoopback refuses a host:port outside the machine: the driver is a
// benchmark tool, not a load generator for other people's servers.
func checkLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("address %q: %w", hostport, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%w: %s", ErrNotLoopback, hostport)
	}
	return nil
}

// mainHTTP is the command line of "driver http": it writes the Result of
// RunHTTP as JSON to -results.
func mainHTTP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("driver http", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: driver http -url http://127.0.0.1:PORT/PATH [flags]\n\n"+
			"Sends GET requests at a fixed rate (open loop) and prints every response time as JSON.\n\n")
		fs.PrintDefaults()
	}
	var cfg HTTPConfig
	fs.StringVar(&cfg.URL, "url", "", "URL to request (loopback only)")
	fs.Float64Var(&cfg.Rate, "rate", 200, fmt.Sprintf("requests per second, above 0 and at most %d", MaxHTTPRate))
	fs.DurationVar(&cfg.For, "for", 5*time.Second, fmt.Sprintf("how long to send requests, at most %v", MaxHTTPFor))
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "bound on each request, 1ms to 1h")
	results := fs.String("results", "-", "file for the JSON results ('-': standard output)")
	parse := func() error {
		if err := cli.Parse(fs, args, stderr); err != nil {
			return err
		}
		return cli.First(cli.Between("timeout", cfg.Timeout, time.Millisecond, time.Hour), cfg.check())
	}
	run := func() error {
		res, err := RunHTTP(context.Background(), cfg)
		if err != nil {
			return err
		}
		if err := writeResults(*results, stdout, res); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		return nil
	}
	return cli.Main("driver http", stderr, parse, run)
}
