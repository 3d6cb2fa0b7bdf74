package main

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// The driver runs a workload through the real jobs.Scheduler, as a
// discrete-event simulation on a virtual clock (Config.Clock). Nothing in
// it sleeps: time jumps from one event (an arrival, the end of a job's
// service) to the next, and between two events the driver waits until the
// scheduler has taken every decision the event causes.
//
// How it knows: a job's body reports its start on a channel, then blocks
// (in thread.Await, holding no processor) until the driver ends it at its
// virtual completion time. The scheduler decides admissions synchronously,
// inside Submit and inside the completion that follows a body's return,
// at the clock's current reading. The configurations here are work
// conserving, so the driver knows how many starts to expect: one after an
// arrival that finds a free slot, one after a completion that leaves jobs
// pending. A completion that leaves none is confirmed with Snapshot, cheap
// on an empty queue. If an expected start does not come, the driver
// checks with Snapshot and fails rather than wait forever: that would be a
// slot left idle while jobs wait.

// served is what the driver measured of one job, in seconds.
type served struct {
	Arrive, Start float64
	Class         int
}

// Wait is how long the job queued before it was admitted.
func (s served) Wait() float64 { return s.Start - s.Arrive }

// epoch is the virtual clock's origin. Any fixed instant does; a fixed one
// keeps runs reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// vclock is the virtual clock the scheduler reads.
type vclock struct{ ns atomic.Int64 }

func (c *vclock) now() time.Time   { return epoch.Add(time.Duration(c.ns.Load())) }
func (c *vclock) set(secs float64) { c.ns.Store(int64(secs * 1e9)) }

// stallCheck is how long the driver waits for an expected start before it
// asks the scheduler whether the start will ever come. It only bounds how
// fast a broken run is reported; a slow machine merely checks more often.
const stallCheck = 2 * time.Second

// errStall reports a slot left idle while jobs were pending.
var errStall = errors.New("the scheduler left a slot idle while jobs were pending")

// Env is what simulations share: a fairly runtime whose priorities the
// tiers use.
type Env struct {
	rt   *runtime.Runtime
	prio priorities
}

// NewEnv starts a runtime with a hi and a lo priority. Close it after use.
func NewEnv(procs int) (*Env, error) {
	o := fairness.NewOrder()
	h, l := o.New("hi"), o.New("lo")
	if err := o.Less(l, h); err != nil {
		return nil, err
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{h: 50, l: 50})
	if err != nil {
		return nil, err
	}
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: crit})
	if err != nil {
		return nil, err
	}
	return &Env{rt: rt, prio: priorities{hi: h, lo: l}}, nil
}

// Close stops the runtime.
func (e *Env) Close() { e.rt.Close() }

// completion is a running job's end of service.
type completion struct {
	end float64
	job int
}

// completions is a min-heap of ends of service.
type completions []completion

func (h completions) Len() int           { return len(h) }
func (h completions) Less(i, j int) bool { return h[i].end < h[j].end }
func (h completions) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *completions) Push(x any)        { *h = append(*h, x.(completion)) }
func (h *completions) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// sim is one run of a workload under a policy.
type sim struct {
	s       *jobs.Scheduler
	clock   vclock
	now     float64
	arr     []arrival
	out     []served
	release []chan struct{}
	started chan int
	ends    completions
	pending int // submitted, not admitted
	timer   *time.Timer
}

// Simulate runs w under pol on env's runtime and returns the jobs that
// arrived after the warm-up, in order of arrival.
func Simulate(env *Env, pol Policy, w Workload) ([]served, error) {
	arr := w.Arrivals()
	m := &sim{
		arr:     arr,
		out:     make([]served, len(arr)),
		release: make([]chan struct{}, len(arr)),
		started: make(chan int, w.Slots+1),
		timer:   time.NewTimer(stallCheck),
	}
	cfg := pol.config(w.Slots, env.prio)
	cfg.Clock = m.clock.now
	s, err := jobs.New(env.rt, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pol.Name, err)
	}
	m.s = s
	if err := m.run(pol, w.Slots); err != nil {
		m.abort()
		return nil, fmt.Errorf("%s, %v: %w", pol.Name, w, err)
	}
	_ = s.Close()
	first := 0
	for first < len(arr) && arr[first].At < w.Warmup {
		first++
	}
	return m.out[first:], nil
}

// abort closes the scheduler after a failed run: every job's body, running
// or still to be admitted, returns at once, and nobody waits for their
// starts any more, so Close can run them all.
func (m *sim) abort() {
	for _, ch := range m.release {
		if ch != nil {
			close(ch)
		}
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-m.started:
			case <-stop:
				return
			}
		}
	}()
	_ = m.s.Close()
	close(stop)
}

// run is the event loop: the next arrival or end of service, whichever
// comes first, until every job has been served.
func (m *sim) run(pol Policy, slots int) error {
	next := 0
	for next < len(m.arr) || len(m.ends) > 0 {
		if len(m.started) > 0 {
			return errors.New("a job started without an event to cause it")
		}
		if next < len(m.arr) && (len(m.ends) == 0 || m.arr[next].At < m.ends[0].end) {
			a := m.arr[next]
			m.advance(a.At)
			if err := m.submit(pol, next, a); err != nil {
				return err
			}
			next++
			if len(m.ends) < slots {
				if err := m.admitted(); err != nil {
					return err
				}
			}
			continue
		}
		c := heap.Pop(&m.ends).(completion)
		m.advance(c.end)
		close(m.release[c.job])
		m.release[c.job] = nil
		if m.pending > 0 {
			if err := m.admitted(); err != nil { // which also means the completion was processed
				return err
			}
			continue
		}
		m.finished(len(m.ends))
	}
	return nil
}

func (m *sim) advance(t float64) {
	m.now = t
	m.clock.set(t)
}

// submit hands job i to the scheduler.
func (m *sim) submit(pol Policy, i int, a arrival) error {
	rel := make(chan struct{})
	m.release[i] = rel
	m.out[i] = served{Arrive: a.At, Class: a.Class}
	started := m.started
	err := m.s.Submit(jobs.Job{
		Type: jobs.JobType(classNames[a.Class]), ID: strconv.Itoa(i),
		Key: pol.key(a.Class), Group: pol.group(a.Class),
		Run: func(_ context.Context, c *thread.Ctx) error {
			started <- i
			thread.Await(c, func() struct{} { <-rel; return struct{}{} })
			return nil
		},
	})
	if err == nil {
		m.pending++
	}
	return err
}

// admitted waits for the one start the last event causes and schedules
// the job's end of service.
func (m *sim) admitted() error {
	for {
		m.timer.Reset(stallCheck)
		select {
		case i := <-m.started:
			m.timer.Stop()
			m.out[i].Start = m.now
			m.pending--
			heap.Push(&m.ends, completion{end: m.now + m.arr[i].Service, job: i})
			return nil
		case <-m.timer.C:
			if snap := m.s.Snapshot(); snap.Running <= len(m.ends) {
				return fmt.Errorf("at %.3fs: %w (%d running, %d pending)", m.now, errStall, snap.Running, len(snap.Pending))
			}
		}
	}
}

// finished waits until the scheduler has processed the completion that
// left running jobs. The body's return takes a few hand-offs through the
// runtime to reach the scheduler, so the driver polls with a growing
// pause, which leaves the processors to the other simulations meanwhile.
func (m *sim) finished(running int) {
	for pause := time.Microsecond; m.s.Snapshot().Running != running; pause = min(2*pause, maxPoll) {
		time.Sleep(pause)
	}
}

// maxPoll bounds the pause between two polls of finished.
const maxPoll = 200 * time.Microsecond
