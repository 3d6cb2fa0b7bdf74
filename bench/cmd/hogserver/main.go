// Command hogserver measures how promptly a user's server answers beside
// ordinary goroutines that compute outside fairly: the case a spare P for
// wake-ups does not cover once the rest of the process takes it.
//
// The server, run as a subprocess of this command, answers /hash (2000
// rounds of SHA-256) and computes beside it:
//
//   - fairly: through fairlyhttp.Handler at priority ui (share 50 %), with a
//     batch thread (share 50 %) running Fork2 fib forever, and -hogs
//     ordinary goroutines hashing without end outside fairly;
//   - fairly-idle: the same server with neither batch thread nor hogs, the
//     idle reference;
//   - fairly-slices: fairly with runtime.Config.ShortTimeSlices;
//   - plain: the net/http twin without fairly, with GOMAXPROCS goroutines
//     computing fib and the same hogs;
//   - floor: plain Go tuned by hand, the fib goroutines and hogs each locked
//     to an OS thread demoted to SCHED_IDLE (Linux) and GOMAXPROCS raised so
//     that one P stays free: what the machine allows beside that much
//     computation.
//
// This process is the client: it sends requests at a constant rate (open
// loop, bench/driver's HTTP load) and prints p50, p99 and max with the
// number of requests, and the server's GOMAXPROCS changes. Cases run one
// after another, -reps times in turn, so that builds given with -server can
// be compared alternately in one run:
//
//	go build -o /tmp/new ./bench/cmd/hogserver
//	hogserver -server old=/tmp/old,new=/tmp/new -cases fairly:1,plain:1 -reps 3
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/fairlyhttp"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// hashRounds is the work of one request: about a third of a millisecond.
const hashRounds = 2000

// fibN is the batch thread's and the fib goroutines' argument.
const fibN = 32

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "hogserver serve:", err)
			os.Exit(1)
		}
		return
	}
	if err := client(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hogserver:", err)
		os.Exit(1)
	}
}

// modes are the servers a case may name.
var modes = []string{"fairly", "fairly-idle", "fairly-slices", "plain", "floor"}

// testCase is one server configuration: a mode and the number of hogs.
type testCase struct {
	mode string
	hogs int
}

func (c testCase) String() string {
	if c.mode == "fairly-idle" {
		return c.mode
	}
	return c.mode + ":" + strconv.Itoa(c.hogs)
}

func parseCases(s string) ([]testCase, error) {
	var cs []testCase
	for f := range strings.SplitSeq(s, ",") {
		mode, n, _ := strings.Cut(strings.TrimSpace(f), ":")
		if !slices.Contains(modes, mode) {
			return nil, fmt.Errorf("case %q: mode is not one of %s", f, strings.Join(modes, ", "))
		}
		c := testCase{mode: mode}
		if n != "" {
			h, err := strconv.Atoi(n)
			if err != nil || h < 0 || h > 64 {
				return nil, fmt.Errorf("case %q: hogs must be 0 to 64", f)
			}
			c.hogs = h
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// server is a build of this command that serves, named for the report.
type server struct{ name, path string }

func parseServers(s string) ([]server, error) {
	if s == "" {
		self, err := os.Executable()
		return []server{{"this", self}}, err
	}
	var ss []server
	for f := range strings.SplitSeq(s, ",") {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			name, path = f, f
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		ss = append(ss, server{name, path})
	}
	return ss, nil
}

// stats is what the server reports when it stops.
type stats struct {
	GOMAXPROCS int `json:"gomaxprocs"` // at the end
	Changes    int `json:"changes"`    // GOMAXPROCS changes seen while serving
	// StopsOther counts the non-collector stops of the world (GOMAXPROCS
	// changes among them) while serving.
	StopsOther uint64 `json:"stops_other"`
}

func client(args []string) error {
	fs := flag.NewFlagSet("hogserver", flag.ContinueOnError)
	casesFlag := fs.String("cases", "fairly-idle,fairly:0,fairly:1,fairly:2,plain:0,plain:1,plain:2", "cases, MODE[:HOGS] separated by commas; modes: "+strings.Join(modes, ", "))
	servers := fs.String("server", "", "builds to compare, NAME=PATH separated by commas (default: this binary)")
	rate := fs.Float64("rate", 200, "requests per second")
	length := fs.Duration("for", 10*time.Second, "how long each case is measured")
	warm := fs.Duration("warm", time.Second, "load before each measurement, not counted")
	reps := fs.Int("reps", 1, "rounds over every case and server")
	procs := fs.Int("procs", 0, "fairly's workers (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cases, err := parseCases(*casesFlag)
	if err != nil {
		return err
	}
	ss, err := parseServers(*servers)
	if err != nil {
		return err
	}
	if *reps < 1 || *rate <= 0 || *length <= 0 {
		return errors.New("-reps, -rate and -for must be positive")
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rep\tserver\tcase\trequests\tp50 ms\tp99 ms\tmax ms\tGOMAXPROCS\tchanges\tother stops\t")
	for rep := range *reps {
		for _, c := range cases {
			for _, s := range ss {
				r, st, err := measure(s.path, c, *procs, *rate, *warm, *length)
				if err != nil {
					return fmt.Errorf("%s %v: %w", s.name, c, err)
				}
				sum := latency.Of(r, 0)
				fmt.Fprintf(tw, "%d\t%s\t%v\t%d\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t\n", rep+1, s.name, c, len(r),
					ms(sum.P50), ms(sum.P99), ms(sum.Max), st.GOMAXPROCS, st.Changes, st.StopsOther)
				tw.Flush()
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// measure starts the server at path for c, warms it, sends the load and
// returns the sorted response times and the server's stats.
func measure(path string, c testCase, procs int, rate float64, warm, length time.Duration) ([]time.Duration, stats, error) {
	var st stats
	cmd := exec.Command(path, "serve", "-mode", c.mode, "-hogs", strconv.Itoa(c.hogs), "-procs", strconv.Itoa(procs))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, st, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, st, err
	}
	if err := cmd.Start(); err != nil {
		return nil, st, err
	}
	defer cmd.Wait()    //nolint:errcheck // the error is in the stats
	defer stdin.Close() //nolint:errcheck
	out := bufio.NewReader(stdout)
	addr, err := out.ReadString('\n')
	if err != nil {
		return nil, st, fmt.Errorf("reading the server's address: %w", err)
	}
	url := "http://" + strings.TrimSpace(addr) + "/hash"
	ctx := context.Background()
	if warm > 0 {
		if _, err := driver.RunHTTP(ctx, driver.HTTPConfig{URL: url, Rate: rate, For: warm}); err != nil {
			return nil, st, err
		}
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil { // the stats count from here
		return nil, st, err
	}
	res, err := driver.RunHTTP(ctx, driver.HTTPConfig{URL: url, Rate: rate, For: length})
	if err != nil {
		return nil, st, err
	}
	if res.Stopped != "" {
		return nil, st, errors.New(res.Stopped)
	}
	stdin.Close() //nolint:errcheck
	line, err := out.ReadString('\n')
	if err != nil {
		return nil, st, fmt.Errorf("reading the server's stats: %w", err)
	}
	if err := json.Unmarshal([]byte(line), &st); err != nil {
		return nil, st, err
	}
	rtt := slices.Clone(res.RTT)
	slices.Sort(rtt)
	return rtt, st, nil
}

// serve is the server process: it prints its address, serves until its
// standard input ends, and prints its stats as JSON.
func serve(args []string) error {
	fs := flag.NewFlagSet("hogserver serve", flag.ContinueOnError)
	mode := fs.String("mode", "fairly", strings.Join(modes, ", "))
	hogs := fs.Int("hogs", 0, "ordinary goroutines hashing outside fairly")
	procs := fs.Int("procs", 0, "fairly's workers (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var stop atomic.Bool
	var h http.Handler = http.HandlerFunc(hash)
	switch *mode {
	case "fairly", "fairly-idle", "fairly-slices":
		o := fairness.NewOrder()
		ui, batch := o.New("ui"), o.New("batch")
		if err := o.Less(batch, ui); err != nil {
			return err
		}
		crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
		if err != nil {
			return err
		}
		rt, err := runtime.New(runtime.Config{Procs: *procs, Order: o, Criterion: crit, ShortTimeSlices: *mode == "fairly-slices"})
		if err != nil {
			return err
		}
		defer rt.Close() //nolint:errcheck
		h = fairlyhttp.Handler(rt, h, fairlyhttp.Default(ui))
		if *mode != "fairly-idle" {
			bt := thread.Go(rt, batch, func(c *thread.Ctx) int {
				n := 0
				for !stop.Load() {
					n += kernels.FibFork(c, fibN)
				}
				return n
			})
			defer bt.Wait() //nolint:errcheck
			startHogs(*hogs, &stop, false)
		}
	case "plain":
		for range goruntime.GOMAXPROCS(0) {
			go fibLoop(&stop, false)
		}
		startHogs(*hogs, &stop, false)
	case "floor":
		n := goruntime.GOMAXPROCS(0)
		goruntime.GOMAXPROCS(n + *hogs + 1)
		for range n {
			go fibLoop(&stop, true)
		}
		startHogs(*hogs, &stop, true)
	default:
		return fmt.Errorf("mode %q is not one of %s", *mode, strings.Join(modes, ", "))
	}
	defer stop.Store(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)  //nolint:errcheck // ends with Close
	defer srv.Close() //nolint:errcheck
	fmt.Println(ln.Addr())
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil { // the measurement begins
		return err
	}
	watch := watchProcs(&stop)
	stops0 := otherStops()
	_, _ = io.Copy(io.Discard, in)
	st := stats{GOMAXPROCS: goruntime.GOMAXPROCS(0), StopsOther: otherStops() - stops0}
	stop.Store(true)
	st.Changes = <-watch
	return json.NewEncoder(os.Stdout).Encode(st)
}

// hash answers with 2000 rounds of SHA-256 of the request's path.
func hash(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(r.URL.Path))
	for range hashRounds - 1 {
		sum = sha256.Sum256(sum[:])
	}
	_, _ = io.WriteString(w, hex.EncodeToString(sum[:]))
}

// startHogs starts n goroutines that hash until stop, with no preemption
// point but Go's own; demoted ones run on OS threads of the idle class.
func startHogs(n int, stop *atomic.Bool, demoted bool) {
	for range n {
		go func() {
			if demoted {
				goruntime.LockOSThread()
				demoteSelf()
			}
			sum := sha256.Sum256(nil)
			for !stop.Load() {
				for range 1000 {
					sum = sha256.Sum256(sum[:])
				}
			}
		}()
	}
}

func fibLoop(stop *atomic.Bool, demoted bool) {
	if demoted {
		goruntime.LockOSThread()
		demoteSelf()
	}
	for !stop.Load() {
		kernels.FibSeq(fibN)
	}
}

// watchProcs samples GOMAXPROCS every 5 ms until stop and sends the number
// of changes it saw. (Not every millisecond: a goroutine that wakes with
// fairly's ticker would compete with it for the spare P at every tick.)
func watchProcs(stop *atomic.Bool) <-chan int {
	ch := make(chan int, 1)
	go func() {
		last, changes := goruntime.GOMAXPROCS(0), 0
		for !stop.Load() {
			time.Sleep(5 * time.Millisecond)
			if n := goruntime.GOMAXPROCS(0); n != last {
				last = n
				changes++
			}
		}
		ch <- changes
	}()
	return ch
}

// otherStops counts the stops of the world not made by the collector.
func otherStops() uint64 {
	s := []metrics.Sample{{Name: "/sched/pauses/total/other:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}
