// Command jobcrash runs jobs on a durable store while it kills the
// processes that run them, and checks every run against the rules.
//
//	go run ./jobs/cmd/jobcrash -store sqlite -procs 1 -jobs 10000 -kill-every 300ms
//	go run ./jobs/cmd/jobcrash -store postgres -procs 3 -jobs 10000 -kill-every 300ms
//
// It starts procs worker processes (itself, with -worker), each of which
// submits its share of the jobs (keys, tiers, groups, conflict groups,
// random durations) and runs what its scheduler admits; every interval it
// kills a random worker with SIGKILL and starts it again, until every job
// has completed. The workers log each acknowledged submission and each
// run's start and end to one file; from it, jobcrash checks that no
// acknowledged job is lost, that two runs of one (type, id) never overlap,
// and that the total slots, the tier cap, the types' MaxConcurrency and
// the conflict group hold at every instant. Its last line is
//
//	jobcrash: S submitted, C completed, L lost, R re-run after a crash, O overlapping runs of one (type, id), V conflict or cap violations
//
// The PostgreSQL store uses the DSN of -dsn or FAIRLY_JOBS_POSTGRES_DSN, in
// a schema of its own (jobcrash), dropped and made afresh.
package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/jobs/pgstore"
	"github.com/fairlyprompt/fairly/jobs/sqlitestore"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

var (
	storeKind = flag.String("store", "sqlite", "sqlite or postgres")
	procs     = flag.Int("procs", 1, "worker processes (1 for sqlite)")
	njobs     = flag.Int("jobs", 10000, "jobs to run")
	killEvery = flag.Duration("kill-every", 300*time.Millisecond, "kill a random worker this often; 0 kills none (a throughput run)")
	dsnFlag   = flag.String("dsn", os.Getenv("FAIRLY_JOBS_POSTGRES_DSN"), "PostgreSQL DSN")
	dir       = flag.String("dir", "", "directory for the SQLite file and the run log (default: a temporary one)")
	timeout   = flag.Duration("timeout", 10*time.Minute, "give up after this long")
	maxDur    = flag.Duration("max-duration", 5*time.Millisecond, "longest job duration (uniform from 0)")
	worker    = flag.Int("worker", -1, "internal: run as worker number n")
	storeArg  = flag.String("store-at", "", "internal: the SQLite path or the PostgreSQL DSN")
	logPath   = flag.String("log", "", "internal: the run log")
)

// The rules the workers run under, which the check verifies.
const (
	slots     = 8
	bgCap     = 4
	cloneMax  = 3
	repackMax = 2
)

var types = []jobs.JobType{"clone", "repack", "export"}

func main() {
	flag.Parse()
	if *worker >= 0 {
		if err := work(); err != nil {
			fmt.Fprintln(os.Stderr, "jobcrash worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jobcrash:", err)
		os.Exit(1)
	}
}

// job is the j-th job of the workload: three types share each id, so
// clone and repack of one id conflict.
func job(j int) (jobs.JobType, string) { return types[j%3], "r" + strconv.Itoa(j/3) }

// config is every worker's scheduler configuration.
func config(p fairness.Priority, handler jobs.Handler) jobs.Config {
	return jobs.Config{
		Slots: slots,
		Tiers: []jobs.Tier{{Name: "bg", Priority: p, Cap: bgCap}, {Name: "fg", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{
			"clone":  {DefaultCost: time.Millisecond, MaxConcurrency: cloneMax, ConflictGroup: "git", Tier: "fg", Handler: handler},
			"repack": {DefaultCost: 2 * time.Millisecond, MaxConcurrency: repackMax, ConflictGroup: "git", Tier: "bg", Handler: handler},
			"export": {DefaultCost: time.Millisecond, Tier: "bg", Handler: handler},
		},
		Groups:     map[string]jobs.GroupConfig{"g0": {Weight: 2}, "g1": {Weight: 1, Min: 1}},
		KeyWeights: map[string]float64{"k0": 2},
		Aging:      jobs.Aging{Grace: 50 * time.Millisecond, Interval: 50 * time.Millisecond},
	}
}

// work is a worker process: it submits its share of the jobs that are
// not yet acknowledged in the log, and runs jobs until it is killed.
func work() error {
	logf, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	pid := strconv.Itoa(os.Getpid())
	note := func(ev string, typ jobs.JobType, id string, attempt int) {
		// One write each: O_APPEND keeps lines of several processes whole.
		_, _ = logf.WriteString(ev + " " + string(typ) + " " + id + " " + strconv.Itoa(attempt) + " " +
			pid + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	}
	var st *jobs.Store
	if *storeKind == "sqlite" {
		st, err = sqlitestore.Open(*storeArg, sqlitestore.Options{})
	} else {
		st, err = pgstore.Open(context.Background(), *storeArg, jobs.StoreOptions{})
	}
	if err != nil {
		return err
	}
	o := fairness.NewOrder()
	p := o.New("jobs")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 1})
	if err != nil {
		return err
	}
	rt, err := runtime.New(runtime.Config{Procs: 1, Criterion: crit})
	if err != nil {
		return err
	}
	typeOf := map[string]jobs.JobType{}
	for _, t := range types {
		typeOf[string(t)] = t
	}
	var mu sync.Mutex
	handler := func(ctx context.Context, c *thread.Ctx, id string, payload []byte) error {
		typ := typeOf[string(payload[:strings.IndexByte(string(payload), ' ')])]
		us, _ := strconv.Atoi(string(payload[strings.IndexByte(string(payload), ' ')+1:]))
		n := jobs.Attempt(ctx)
		note("B", typ, id, n)
		err := thread.Sleep(c, time.Duration(us)*time.Microsecond)
		note("E", typ, id, n)
		return err
	}
	cfg := config(p, handler)
	cfg.Store = st
	s, err := jobs.New(rt, cfg)
	if err != nil {
		return err
	}
	acked := map[int]bool{}
	if f, err := os.Open(*logPath); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 6 && f[0] == "S" {
				n, _ := strconv.Atoi(strings.TrimPrefix(f[2], "r"))
				acked[n*3+slices.Index(types, jobs.JobType(f[1]))] = true
			}
		}
		f.Close()
	}
	todo := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for j := range todo {
				typ, id := job(j)
				rng := rand.New(rand.NewPCG(uint64(j), 7))
				dur := rng.Int64N(int64(*maxDur/time.Microsecond) + 1)
				err := s.Submit(jobs.Job{Type: typ, ID: id, Key: "k" + strconv.Itoa(j%5),
					Group: "g" + strconv.Itoa(j%3), Payload: []byte(string(typ) + " " + strconv.FormatInt(dur, 10))})
				if err != nil {
					mu.Lock()
					fmt.Fprintln(os.Stderr, "submit:", err)
					mu.Unlock()
					continue
				}
				note("S", typ, id, 0)
			}
		})
	}
	for j := *worker; j < *njobs; j += *procs {
		if !acked[j] {
			todo <- j
		}
	}
	close(todo)
	wg.Wait()
	select {} // run until killed
}

// proc is a worker process: its number and its current command.
type proc struct {
	n   int
	cmd *exec.Cmd
}

func run() error {
	if *storeKind != "sqlite" && *storeKind != "postgres" {
		return fmt.Errorf("-store must be sqlite or postgres, not %q", *storeKind)
	}
	if *storeKind == "sqlite" && *procs != 1 {
		return fmt.Errorf("an SQLite store serves one process: -procs 1")
	}
	if *procs < 1 || *njobs < 1 || *killEvery < 0 {
		return fmt.Errorf("-procs and -jobs must be positive, -kill-every not negative")
	}
	d := *dir
	if d == "" {
		var err error
		if d, err = os.MkdirTemp("", "jobcrash"); err != nil {
			return err
		}
		defer os.RemoveAll(d)
	}
	logName := filepath.Join(d, "runs.log")
	_ = os.Remove(logName)
	at := filepath.Join(d, "jobs.db")
	if *storeKind == "postgres" {
		if *dsnFlag == "" {
			return fmt.Errorf("-store postgres needs -dsn or FAIRLY_JOBS_POSTGRES_DSN")
		}
		var err error
		if at, err = pgstore.FreshSchema(context.Background(), *dsnFlag, "jobcrash"); err != nil {
			return err
		}
	} else {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(at + suffix)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := func(n int) (*exec.Cmd, error) {
		cmd := exec.Command(self, "-worker", strconv.Itoa(n), "-store", *storeKind, "-store-at", at,
			"-log", logName, "-procs", strconv.Itoa(*procs), "-jobs", strconv.Itoa(*njobs),
			"-max-duration", maxDur.String())
		cmd.Stderr = os.Stderr
		return cmd, cmd.Start()
	}
	ps := make([]*proc, *procs)
	for i := range ps {
		cmd, err := start(i)
		if err != nil {
			return err
		}
		ps[i] = &proc{n: i, cmd: cmd}
	}
	kills := map[int]int64{} // pid → when the SIGKILL was sent
	kill := func(p *proc) {
		kills[p.cmd.Process.Pid] = time.Now().UnixNano()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
	began := time.Now()
	deadline := began.Add(*timeout)
	every := *killEvery
	if every == 0 {
		every = 20 * time.Millisecond // only to look for the end
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	nkills := 0
	for range tick.C {
		if ev, _ := readLog(logName); ev.completed() >= *njobs || time.Now().After(deadline) {
			break
		}
		if *killEvery == 0 {
			continue
		}
		p := ps[rand.IntN(len(ps))]
		kill(p)
		nkills++
		cmd, err := start(p.n)
		if err != nil {
			return err
		}
		p.cmd = cmd
	}
	for _, p := range ps {
		kill(p)
	}
	ev, err := readLog(logName)
	if err != nil {
		return err
	}
	took := time.Since(began)
	fmt.Printf("%d workers killed %d times; %d jobs completed in %v from the workers' start, %.0f jobs/s\n",
		*procs, nkills, ev.completed(), took.Round(time.Millisecond), float64(ev.completed())/took.Seconds())
	r := ev.check(kills)
	fmt.Printf("jobcrash: %d submitted, %d completed, %d lost, %d re-run after a crash, %d overlapping runs of one (type, id), %d conflict or cap violations\n",
		r.submitted, r.completed, r.lost, r.rerun, r.overlapping, r.violations)
	return nil
}

// event is one line of the run log.
type event struct {
	kind    string
	typ, id string
	attempt int
	pid     int
	at      int64
}

type events []event

func readLog(path string) (events, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out events
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 {
			continue // a line cut by a kill
		}
		a, _ := strconv.Atoi(f[3])
		pid, _ := strconv.Atoi(f[4])
		at, _ := strconv.ParseInt(f[5], 10, 64)
		out = append(out, event{kind: f[0], typ: f[1], id: f[2], attempt: a, pid: pid, at: at})
	}
	return out, sc.Err()
}

// completed counts the (type, id)s with an end.
func (ev events) completed() int {
	done := map[string]bool{}
	for _, e := range ev {
		if e.kind == "E" {
			done[e.typ+"/"+e.id] = true
		}
	}
	return len(done)
}

type report struct {
	submitted, completed, lost, rerun, overlapping, violations int
}

// interval is one run: from its start to its end, or to the SIGKILL of
// its process.
type interval struct {
	typ, id  string
	from, to int64
}

// check verifies the log against the rules.
func (ev events) check(kills map[int]int64) report {
	var r report
	submitted := map[string]bool{}
	done := map[string]bool{}
	starts := map[string]int{}
	open := map[string]event{} // by type/id/attempt/pid
	var runs []interval
	last := map[int]int64{} // each process's last event
	for _, e := range ev {
		k := e.typ + "/" + e.id
		last[e.pid] = max(last[e.pid], e.at)
		switch e.kind {
		case "S":
			submitted[k] = true
		case "B":
			starts[k]++
			open[k+"/"+strconv.Itoa(e.attempt)+"/"+strconv.Itoa(e.pid)] = e
		case "E":
			done[k] = true
			ok := k + "/" + strconv.Itoa(e.attempt) + "/" + strconv.Itoa(e.pid)
			if b, found := open[ok]; found {
				runs = append(runs, interval{typ: e.typ, id: e.id, from: b.at, to: e.at})
				delete(open, ok)
			}
		}
	}
	for _, b := range open { // cut by a SIGKILL
		to := max(kills[b.pid], last[b.pid])
		runs = append(runs, interval{typ: b.typ, id: b.id, from: b.at, to: to})
	}
	r.submitted, r.completed = len(submitted), len(done)
	for k := range submitted {
		if !done[k] {
			r.lost++
		}
	}
	for _, n := range starts {
		r.rerun += n - 1
	}
	// Sweep the runs' starts and ends in time order (an end before a start
	// at the same instant): overlaps of one (type, id), and the caps.
	type edge struct {
		at    int64
		start bool
		i     int
	}
	var edges []edge
	for i, iv := range runs {
		edges = append(edges, edge{iv.from, true, i}, edge{iv.to, false, i})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		if a.start == b.start {
			return 0
		}
		if a.start {
			return 1
		}
		return -1
	})
	running, bg := 0, 0
	byType := map[string]int{}
	byJob := map[string]int{}
	gitByID := map[string]int{}
	for _, e := range edges {
		iv := runs[e.i]
		d := 1
		if !e.start {
			d = -1
		}
		running += d
		byType[iv.typ] += d
		byJob[iv.typ+"/"+iv.id] += d
		if iv.typ != "clone" {
			bg += d
		}
		if iv.typ != "export" {
			gitByID[iv.id] += d
		}
		if !e.start {
			continue
		}
		if byJob[iv.typ+"/"+iv.id] > 1 {
			r.overlapping++
		}
		if running > slots || bg > bgCap || byType["clone"] > cloneMax || byType["repack"] > repackMax ||
			iv.typ != "export" && gitByID[iv.id] > 1 {
			r.violations++
		}
	}
	return r
}
