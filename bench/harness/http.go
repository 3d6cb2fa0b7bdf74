package harness

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/bench/tokens"
	"github.com/fairlyprompt/fairly/fairlyhttp"
)

// The http experiment (golang/go #51071): an HTTP endpoint that does a
// fraction of a millisecond of work per request, under an open-loop load
// at a fixed rate from the driver process, idle and beside a CPU-heavy
// batch (fib at coarse grain, repeated) in the same process, on three
// systems:
//
//   - net/http: plain handlers and a plain-goroutine batch, GOMAXPROCS P;
//   - fairlyhttp: handlers through fairlyhttp.Handler at high priority, the
//     batch at low, criterion 50-0-50, P workers;
//   - cpuworker-style: plain handlers, the batch in tasks of a token
//     limiter (package tokens, as hnes/cpuworker: tokens.AutoTokens(P)
//     tokens, 1 ms slices, a checkpoint at every leaf), GOMAXPROCS P.
//
// Besides the latencies it measures the batch's throughput with the
// requests and alone, on the same system.

const kindHTTP = "http"

// Systems of the http experiment.
const (
	sysNetHTTP    = "net/http"
	sysFairlyHTTP = "fairlyhttp"
	sysTokens     = "cpuworker-style"
)

var httpSystems = []string{sysNetHTTP, sysFairlyHTTP, sysTokens}

// Loads of the http experiment: the requests alone, the requests beside
// the batch, and the batch alone.
const (
	loadIdle  = "idle"
	loadBatch = "batch"
	loadAlone = "alone"
)

// httpCriterion gives the handlers (high) and the batch (low) half each.
var httpCriterion = Criterion{50, 0, 50}

// tokenSlice is cpuworker's default time slice.
const tokenSlice = time.Millisecond

// Bounds and defaults of HTTPConfig.
const (
	MaxHTTPKiB      = 1024
	defaultHTTPRate = 200
	defaultHTTPFor  = 5 * time.Second
	defaultHTTPKiB  = 256
)

// HTTPConfig sets the http experiment's load; zero fields take defaults.
type HTTPConfig struct {
	// Rate is the request rate, per second (default 200).
	Rate float64 `json:"rate"`
	// For is the length of one run (default 5 s).
	For time.Duration `json:"for_ns"`
	// KiB is how much each request hashes, in KiB (default 256: a
	// fraction of a millisecond of SHA-256 on a recent x86 core).
	KiB int `json:"kib"`
}

// withDefaults fills the zero fields.
func (h HTTPConfig) withDefaults() HTTPConfig {
	if h.Rate == 0 {
		h.Rate = defaultHTTPRate
	}
	if h.For == 0 {
		h.For = defaultHTTPFor
	}
	if h.KiB == 0 {
		h.KiB = defaultHTTPKiB
	}
	return h
}

// validate reports the first problem of h, matching ErrConfig.
func (h HTTPConfig) validate() error {
	switch {
	case !(h.Rate >= 0 && h.Rate <= driver.MaxHTTPRate):
		return badConfig("http rate %v is not in (0, %d] requests per second (0: the default)", h.Rate, driver.MaxHTTPRate)
	case h.For < 0 || h.For > driver.MaxHTTPFor:
		return badConfig("http run length %v is not in (0, %v] (0: the default)", h.For, driver.MaxHTTPFor)
	case h.KiB < 0 || h.KiB > MaxHTTPKiB:
		return badConfig("http work %d KiB is not in 1..%d (0: the default)", h.KiB, MaxHTTPKiB)
	}
	return nil
}

// httpResults is the http experiment's settings for Results, nil when it
// does not run.
func (c *Config) httpResults() *HTTPConfig {
	if !c.needs("http") {
		return nil
	}
	h := c.HTTP.withDefaults()
	return &h
}

// httpConfig is the http experiment's settings of a run.
func (r *Results) httpConfig() HTTPConfig {
	if r.HTTP == nil {
		return HTTPConfig{}.withDefaults()
	}
	return *r.HTTP
}

// httpInput is what the handler hashes: 1 MiB made once.
var httpInput = sync.OnceValue(func() []byte { return stallBytes(1).([]byte) })

// httpWork is the experiment's handler: it parses its query, hashes the
// seed and kib KiB of input, and answers with the digest.
func httpWork(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	seed, err := strconv.ParseUint(q.Get("seed"), 10, 64)
	kib, kerr := strconv.Atoi(q.Get("kib"))
	if err != nil || kerr != nil || kib < 0 || kib > MaxHTTPKiB {
		http.Error(w, fmt.Sprintf("want ?seed=N&kib=K with K in 0..%d", MaxHTTPKiB), http.StatusBadRequest)
		return
	}
	h := sha256.New()
	_ = binary.Write(h, binary.LittleEndian, seed) // a hash never fails to write
	h.Write(httpInput()[:kib<<10])
	fmt.Fprintf(w, "%x\n", h.Sum(nil))
}

// httpSteps are the http experiment's steps: every repetition runs each
// load on each system in turn, so that the systems are compared side by
// side at the same moment of a noisy machine.
func (s *suite) httpSteps() []step {
	var steps []step
	for _, p := range s.cfg.Procs {
		for rep := range s.cfg.Reps {
			for _, load := range []string{loadAlone, loadIdle, loadBatch} {
				for _, sys := range httpSystems {
					steps = append(steps, step{
						name: fmt.Sprintf("http %s %s P=%d run %d", sys, load, p, rep+1),
						run:  func() (*Record, error) { return s.httpRun(sys, load, p) },
					})
				}
			}
		}
	}
	return steps
}

// httpSystem is one system's server and batch.
type httpSystem struct {
	handler http.Handler
	// batch computes fib until stop is set, adding one to units per fib
	// computed.
	batch func(stop *atomic.Bool, units *atomic.Int64) error
	close func() error
}

// newHTTPSystem sets up sys at procs processors with fib of size n as the
// batch.
func newHTTPSystem(sys string, procs, n int) (*httpSystem, error) {
	inst := kernels.NewFib(n, coarseCutoff)
	httpInput() // made before the first request, not in it
	loop := func(run func() (time.Duration, error)) func(*atomic.Bool, *atomic.Int64) error {
		return func(stop *atomic.Bool, units *atomic.Int64) error {
			for !stop.Load() {
				if _, err := run(); err != nil {
					return err
				}
				units.Add(1)
			}
			return nil
		}
	}
	switch sys {
	case sysFairlyHTTP:
		p := newPrios()
		rt, err := p.runtime(procs, httpCriterion)
		if err != nil {
			return nil, err
		}
		return &httpSystem{
			handler: fairlyhttp.Handler(rt, http.HandlerFunc(httpWork), fairlyhttp.Default(p.hi)),
			batch:   loop(func() (time.Duration, error) { return fairlyRun(rt, p.lo, inst) }),
			close:   rt.Close,
		}, nil
	case sysTokens:
		l := tokens.New(tokens.AutoTokens(procs), tokenSlice)
		want := kernels.FibSeq(n)
		return &httpSystem{
			handler: http.HandlerFunc(httpWork),
			batch: func(stop *atomic.Bool, units *atomic.Int64) error {
				var wg sync.WaitGroup
				errs := make([]error, procs)
				for i := range procs {
					wg.Go(func() {
						for !stop.Load() {
							var v int
							l.Run(func(checkpoint func()) { v = fibCheckpoints(n, checkpoint) })
							if v != want {
								errs[i] = fmt.Errorf("%w: fib(%d) = %d, want %d", kernels.ErrWrongResult, n, v, want)
								return
							}
							units.Add(1)
						}
					})
				}
				wg.Wait()
				return errors.Join(errs...)
			},
			close: func() error { return nil },
		}, nil
	}
	return &httpSystem{
		handler: http.HandlerFunc(httpWork),
		batch:   loop(func() (time.Duration, error) { return goroutinesRun(inst) }),
		close:   func() error { return nil },
	}, nil
}

// fibCheckpoints is fib with a cpuworker checkpoint at every leaf of the
// coarse-grain kernel's recursion.
func fibCheckpoints(n int, checkpoint func()) int {
	if n <= coarseCutoff {
		checkpoint()
		return kernels.FibSeq(n)
	}
	return fibCheckpoints(n-1, checkpoint) + fibCheckpoints(n-2, checkpoint)
}

// httpRun is one run of the http experiment: system sys at procs
// processors under load.
func (s *suite) httpRun(sys, load string, procs int) (*Record, error) {
	n, hc := s.cfg.fibSize(), s.cfg.HTTP.withDefaults()
	rec := &Record{Kind: kindHTTP, Kernel: load, Size: n, Procs: procs, System: sys}
	if sys == sysFairlyHTTP {
		rec.Criterion = httpCriterion.String()
	}
	run := func() (*Record, error) {
		hs, err := newHTTPSystem(sys, procs, n)
		if err != nil {
			return nil, err
		}
		var stop atomic.Bool
		var units atomic.Int64
		batchErr := make(chan error, 1)
		if load == loadIdle {
			batchErr <- nil
		} else {
			go func() { batchErr <- hs.batch(&stop, &units) }()
		}
		start := time.Now()
		if load == loadAlone {
			time.Sleep(hc.For)
		} else {
			rec.Echo, err = s.cfg.httpLoad(hs.handler, hc)
		}
		done, elapsed := units.Load(), time.Since(start)
		stop.Store(true)
		berr := <-batchErr
		if load != loadIdle {
			rec.Throughput = float64(done) / elapsed.Seconds()
		}
		return rec, closeAll(err, berr, hs.close())
	}
	if sys == sysFairlyHTTP {
		return run() // the runtime sets GOMAXPROCS itself
	}
	return withProcs(procs, run)
}

// httpLoad serves handler on loopback while a driver process sends it
// hc's open-loop load, and returns what the driver measured.
func (cfg *Config) httpLoad(handler http.Handler, hc HTTPConfig) (*driver.Result, error) {
	ln, err := interactive.Listen()
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := fmt.Sprintf("http://%s/work?seed=1&kib=%d", ln.Addr(), hc.KiB)
	d := &driverProc{cmd: cfg.Driver("http", "-url", url, "-rate", num(hc.Rate), "-for", hc.For.String(), "-results", "-"), done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, &d.stderr
	var res *driver.Result
	if err = d.start(); err == nil {
		res, err = d.finish()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serr := srv.Shutdown(ctx) // waits for the handlers still running
	if serr != nil {
		serr = errors.Join(serr, srv.Close())
	}
	if perr := <-served; !errors.Is(perr, http.ErrServerClosed) {
		serr = errors.Join(serr, perr)
	}
	return res, closeAll(err, serr)
}

// httpRecords are the records of one setting, one per repetition.
func (r *Results) httpRecords(sys, load string, procs int) []*Record {
	var out []*Record
	for _, rec := range r.Records {
		if rec.Kind == kindHTTP && rec.System == sys && rec.Kernel == load && rec.Procs == procs {
			out = append(out, rec)
		}
	}
	return out
}

// httpSpread summarises f over the repetitions of a setting, skipping
// repetitions f has no value for (NaN).
func httpSpread(recs []*Record, f func(*Record) float64) Spread {
	var xs []float64
	for _, rec := range recs {
		if x := f(rec); x == x {
			xs = append(xs, x)
		}
	}
	return spreadOf(xs)
}

// httpPaired summarises f over the repetitions of two settings taken side
// by side (run i of each): ratios of p99s, of throughputs.
func httpPaired(a, b []*Record, f func(a, b *Record) float64) Spread {
	var xs []float64
	for i := range min(len(a), len(b)) {
		if x := f(a[i], b[i]); x == x {
			xs = append(xs, x)
		}
	}
	return spreadOf(xs)
}

// p99ms is a record's p99 in milliseconds, NaN without answers.
func p99ms(rec *Record) float64 {
	if l := echoLatency(rec); l.N > 0 {
		return inMs(l.P99)
	}
	return math.NaN()
}

// httpShare is the share of the processors the batch is configured to
// keep: its share of the criterion on fairly, the fraction of processors
// its tokens hold on the limiter, none on plain net/http.
func httpShare(sys string, procs int) (float64, bool) {
	switch sys {
	case sysFairlyHTTP:
		return httpCriterion[2] / (httpCriterion[0] + httpCriterion[1] + httpCriterion[2]), true
	case sysTokens:
		return float64(tokens.AutoTokens(procs)) / float64(procs), true
	}
	return 0, false
}

func httpTable(res *Results) Section {
	hc := res.httpConfig()
	t := table{head: []string{"system", "P", "idle p50 (ms)", "idle p99 (ms)", "batch p50 (ms)", "batch p99 (ms)", "batch max (ms)",
		"p99 batch ÷ idle", "batch alone (fib/s)", "batch with requests (fib/s)", "÷ alone", "configured share", "answered"}}
	for _, p := range res.Procs {
		for _, sys := range httpSystems {
			idle, loaded, alone := res.httpRecords(sys, loadIdle, p), res.httpRecords(sys, loadBatch, p), res.httpRecords(sys, loadAlone, p)
			if len(idle)+len(loaded)+len(alone) == 0 {
				continue
			}
			lat := func(recs []*Record, q func(Latency) time.Duration) Spread {
				return httpSpread(recs, func(r *Record) float64 {
					if l := echoLatency(r); l.N > 0 {
						return inMs(q(l))
					}
					return math.NaN()
				})
			}
			p50 := func(l Latency) time.Duration { return l.P50 }
			p99 := func(l Latency) time.Duration { return l.P99 }
			maxL := func(l Latency) time.Duration { return l.Max }
			rate := func(r *Record) float64 { return r.Throughput }
			share := "none"
			if f, ok := httpShare(sys, p); ok {
				share = fmt.Sprintf("%.2f", f)
			}
			got, sent := 0, 0
			for _, r := range append(idle, loaded...) {
				if r.Echo != nil {
					got, sent = got+r.Echo.Received, sent+r.Echo.Sent
				}
			}
			t.add(sys, fmt.Sprint(p),
				lat(idle, p50).format(2, ""), lat(idle, p99).format(2, ""),
				lat(loaded, p50).format(2, ""), lat(loaded, p99).format(2, ""), lat(loaded, maxL).format(1, ""),
				httpPaired(loaded, idle, func(a, b *Record) float64 { return p99ms(a) / p99ms(b) }).format(2, "×"),
				httpSpread(alone, rate).format(1, ""), httpSpread(loaded, rate).format(1, ""),
				httpPaired(loaded, alone, func(a, b *Record) float64 { return a.Throughput / b.Throughput }).format(2, ""),
				share, fmt.Sprintf("%d/%d", got, sent))
		}
	}
	return Section{
		Title: "HTTP: an endpoint beside a CPU-heavy batch",
		Text: fmt.Sprintf("An open-loop load of %g GET requests/s for %v per run, from the driver process (vegeta's attacker; response times "+
			"from each request's sending; it never waits for answers), against a handler that parses its query and hashes %d KiB with SHA-256; "+
			"idle, and beside a batch computing fib(%d) (coarse grain, cutoff %d) over and over. net/http: plain handlers and goroutines, "+
			"GOMAXPROCS P. fairlyhttp: the handler through fairlyhttp.Handler at high priority, the batch at low, criterion %v. "+
			"cpuworker-style: plain handlers, the batch in the tasks of a token limiter (%s, %v slices, a checkpoint per leaf). "+
			"Cells: median of %d runs (min–max); ratios pair the runs made side by side. Goals: fairlyhttp's p99 with the batch ≤ 2× its idle p99, "+
			"and the batch with requests ÷ alone ≥ its configured share.",
			hc.Rate, hc.For, hc.KiB, res.httpFibSize(), coarseCutoff, httpCriterion, "tokens.AutoTokens(P)", tokenSlice, res.Reps),
		Table: t.String(),
		Chart: "http.png",
		draw:  func(path string) error { return drawHTTP(res, path) },
	}
}

// httpFibSize is the batch's n, as the records hold it.
func (r *Results) httpFibSize() int {
	for _, rec := range r.Records {
		if rec.Kind == kindHTTP {
			return rec.Size
		}
	}
	return 0
}

// drawHTTP plots each system's p99, idle and beside the batch, per P: a
// point at the median of the runs with a bar over their range, and
// fairlyhttp's goal (twice its idle p99) as a line.
func drawHTTP(res *Results, path string) error {
	hc := res.httpConfig()
	p := logPlot(fmt.Sprintf("HTTP endpoint beside a CPU-heavy batch: p99 response time\n"+
		"point: median of %d runs of %v at %g requests/s, bar: their min–max", res.Reps, hc.For, hc.Rate),
		"system serving the requests and running the batch",
		"p99 response time (ms, log scale)")
	var ys []float64
	i := 0
	x0, x1 := -0.5, float64(len(httpSystems))-0.5
	for _, procs := range res.Procs {
		for j, load := range []string{loadIdle, loadBatch} {
			var pts spreadPoints
			for x, sys := range httpSystems {
				if s := httpSpread(res.httpRecords(sys, load, procs), p99ms); s.N > 0 {
					pts.add(float64(x)+0.12*(float64(2*i+j)-0.5), lg(s.Median), lg(s.Min), lg(s.Max))
					ys = append(ys, s.Min, s.Max)
				}
			}
			label := "idle"
			if load == loadBatch {
				label = "beside the batch"
			}
			if err := pts.draw(p, 2*i+j, fmt.Sprintf("%s, P=%d", label, procs)); err != nil {
				return err
			}
		}
		if idle := httpSpread(res.httpRecords(sysFairlyHTTP, loadIdle, procs), p99ms); idle.N > 0 {
			ys = append(ys, 2*idle.Median)
			goal := refLine{y: lg(2 * idle.Median), label: fmt.Sprintf("goal: fairlyhttp ≤ 2× its idle p99, P=%d", procs), style: dashed}
			if err := goal.draw(p, x0, x1); err != nil {
				return err
			}
		}
		i++
	}
	if len(ys) == 0 {
		return errors.New("no http measurement to draw")
	}
	p.X.Min, p.X.Max = x0, x1
	decades(p, ys)
	p.NominalX(httpSystems...)
	return save(p, 6*vg.Inch, 4*vg.Inch, path)
}
