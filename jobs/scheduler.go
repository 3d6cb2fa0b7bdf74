package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Func is a job's body. It runs as a fairly thread: c lets it Spawn and
// Join parallel work and Await its blocking calls, so that waiting on the
// network or the disk does not hold a processor (a RunSync from inside a
// job is such a blocking call). ctx is cancelled when every caller waiting
// for the job has given up.
type Func func(ctx context.Context, c *thread.Ctx) error

// Job is a unit of work submitted to the Scheduler, identified by its type
// and ID.
type Job struct {
	Type JobType
	ID   string
	// Key is the fairness key (a client, a tenant); jobs without one share
	// the key "".
	Key string
	// Group is the slot group; "" is a group like any other.
	Group string
	// Weight is w in Smith's rule, the job's importance; 0 means 1.
	Weight float64
	Run    Func
}

// launcher starts an admitted job; the job's end must reach
// Scheduler.finish.
type launcher interface {
	launch(s *Scheduler, e *entry)
}

// onFairly runs each job as a fairly thread at the priority of its base
// tier: aging changes when a job is admitted, not its processor share.
type onFairly struct {
	rt   *runtime.Runtime
	prio []fairness.Priority
}

func (l onFairly) launch(s *Scheduler, e *entry) {
	s.jobs.Add(1)
	go func() { // waits for the thread; jobs are coarse, so one goroutine each is cheap
		defer s.jobs.Done()
		h := thread.Go(l.rt, l.prio[e.base], func(c *thread.Ctx) error { return e.run(e.ctx, c) })
		bodyErr, err := h.Wait()
		if err == nil {
			err = bodyErr
		}
		s.finish(e, err)
	}()
}

// Scheduler admits coarse jobs by one ordering (see the package
// documentation) and runs them on a fairly runtime. Its methods are safe
// for concurrent use.
type Scheduler struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when nothing is pending or running
	c      *core
	m      *metrics
	run    launcher
	closed bool
	timer  *time.Timer
	wakeAt time.Time
	jobs   sync.WaitGroup

	evMu       sync.Mutex
	evq        []Event
	delivering bool
}

// New makes a Scheduler that runs its jobs on rt. Every tier's Priority
// must be a priority of rt. Close the Scheduler before rt: jobs admitted
// after rt closed fail with runtime.ErrClosed.
func New(rt *runtime.Runtime, cfg Config) (*Scheduler, error) {
	if rt == nil {
		return nil, invalid("nil runtime")
	}
	s, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	prio := make([]fairness.Priority, len(cfg.Tiers))
	for i, t := range cfg.Tiers {
		if _, err := rt.Rank(t.Priority); err != nil {
			return nil, fmt.Errorf("%w: tier %q: %w", ErrInvalidConfig, t.Name, err)
		}
		prio[i] = t.Priority
	}
	return newScheduler(s, onFairly{rt: rt, prio: prio}), nil
}

func newScheduler(s *settings, run launcher) *Scheduler {
	m := newMetrics()
	sc := &Scheduler{c: newCore(s, m), m: m, run: run}
	sc.idle.L = &sc.mu
	return sc
}

func (s *Scheduler) now() time.Time { return s.c.s.Clock() }

// check validates a job against the configuration.
func (s *Scheduler) check(j Job) (*typeState, float64, error) {
	t, ok := s.c.types[j.Type]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrUnknownType, j.Type)
	}
	if j.Run == nil {
		return nil, 0, fmt.Errorf("%w: %s %q has no Run", ErrInvalidJob, j.Type, j.ID)
	}
	w := j.Weight
	if w == 0 {
		w = 1
	} else if !positive(w) {
		return nil, 0, fmt.Errorf("%w: %s %q: weight %v", ErrInvalidJob, j.Type, j.ID, w)
	}
	return t, w, nil
}

// Submit queues j and returns at once. A Submit of a (type, id) that is
// already pending coalesces with it: the job runs once, with the first
// submission's body, key and group.
func (s *Scheduler) Submit(j Job) error {
	_, err := s.enter(j, false)
	return err
}

// RunSync queues j and waits until it has run, returning its error. RunSync
// calls for the same (type, id) that overlap share one execution. If ctx
// ends first, RunSync returns ctx.Err(); a job nobody else waits for is then
// withdrawn if still pending, or has its context cancelled if running.
func (s *Scheduler) RunSync(ctx context.Context, j Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e, err := s.enter(j, true)
	if err != nil {
		return err
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
	}
	select {
	case <-e.done: // finished at the same moment: the result wins
		return e.err
	default:
	}
	s.abandon(e, ctx.Err())
	return ctx.Err()
}

func (s *Scheduler) enter(j Job, shareRunning bool) (*entry, error) {
	t, w, err := s.check(j)
	if err != nil {
		return nil, err
	}
	id := tid{j.Type, j.ID}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	var e *entry
	if js, ok := s.c.jobs[id]; ok {
		e = js.pending
		if e == nil && shareRunning {
			e = js.running
		}
	}
	if e != nil {
		e.owners++
		s.mu.Unlock()
		return e, nil
	}
	e = &entry{tid: id, typ: t, weight: w, run: j.Run, owners: 1, done: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	s.c.enqueue(e, j.Group, j.Key, s.now())
	s.unlockAndLaunch(s.commit())
	return e, nil
}

// abandon drops one waiter of e.
func (s *Scheduler) abandon(e *entry, err error) {
	s.mu.Lock()
	e.owners--
	switch {
	case e.owners > 0 || e.st == finished:
		s.mu.Unlock()
		return
	case e.st == running:
		e.cancel()
		s.mu.Unlock()
		return
	}
	s.c.remove(e)
	e.err = err
	close(e.done)
	e.cancel()
	s.unlockAndLaunch(s.commit())
}

// finish records the end of a job that ran.
func (s *Scheduler) finish(e *entry, err error) {
	s.mu.Lock()
	now := s.now()
	s.c.complete(e, max(now.Sub(e.start), 0), now)
	e.err = err
	close(e.done)
	e.cancel()
	s.unlockAndLaunch(s.commit())
}

// commit admits what can run and re-arms the aging timer; mu is held.
func (s *Scheduler) commit() []*entry {
	now := s.now()
	admitted := s.c.dispatch(now)
	if s.c.nPending+s.c.nRunning == 0 {
		s.idle.Broadcast()
	}
	if len(s.c.events) > 0 {
		s.evMu.Lock()
		s.evq = append(s.evq, s.c.events...)
		s.evMu.Unlock()
		s.c.events = s.c.events[:0]
	}
	if w := s.c.wake(); !w.IsZero() && !w.Equal(s.wakeAt) && !(s.closed && s.c.nPending == 0) {
		s.wakeAt = w
		d := max(w.Sub(now), 0)
		if s.timer == nil {
			s.timer = time.AfterFunc(d, s.tick)
		} else {
			s.timer.Reset(d)
		}
	}
	return admitted
}

// tick runs when a job is due to age (or idle keys to be forgotten).
func (s *Scheduler) tick() {
	s.mu.Lock()
	s.wakeAt = time.Time{}
	s.unlockAndLaunch(s.commit())
}

// unlockAndLaunch releases mu, starts the admitted jobs and hands out the
// queued events.
func (s *Scheduler) unlockAndLaunch(admitted []*entry) {
	s.mu.Unlock()
	for _, e := range admitted {
		s.run.launch(s, e)
	}
	s.deliver()
}

// deliver passes queued events to OnEvent, from one goroutine at a time and
// in the order they happened.
func (s *Scheduler) deliver() {
	s.evMu.Lock()
	if s.delivering || len(s.evq) == 0 {
		s.evMu.Unlock()
		return
	}
	s.delivering = true
	for len(s.evq) > 0 {
		batch := s.evq
		s.evq = nil
		s.evMu.Unlock()
		if f := s.c.s.OnEvent; f != nil {
			for _, ev := range batch {
				f(ev)
			}
		}
		s.evMu.Lock()
	}
	s.delivering = false
	s.evMu.Unlock()
}

// SetGroupWeight changes a group's weight; the allocation follows at once.
func (s *Scheduler) SetGroupWeight(group string, weight float64) error {
	if !positive(weight) {
		return invalid("group %q: weight must be > 0, got %v", group, weight)
	}
	s.mu.Lock()
	s.setWeight(s.c.group(group), weight)
	s.unlockAndLaunch(s.commit())
	return nil
}

// ResetGroupWeights gives every group its configured weight back (or
// Config.DefaultGroupWeight).
func (s *Scheduler) ResetGroupWeights() {
	s.mu.Lock()
	for _, g := range s.c.glist {
		w := s.c.s.DefaultGroupWeight
		if gc, ok := s.c.s.Groups[g.name]; ok {
			w = gc.Weight
		}
		s.setWeight(g, w)
	}
	s.unlockAndLaunch(s.commit())
}

func (s *Scheduler) setWeight(g *group, w float64) {
	if g.weight == w {
		return
	}
	s.c.events = append(s.c.events, Event{
		Kind: EventWeightChanged, Time: s.now(), Group: g.name, PrevWeight: g.weight, NewWeight: w,
	})
	g.weight = w
	s.c.allocDirty, s.c.allocReason = true, ReasonWeightChange
}

// PauseGroup stops admitting the group's jobs; its slots go to the other
// groups until ResumeGroup. Running jobs are not interrupted.
func (s *Scheduler) PauseGroup(group string) { s.pause(group, true) }

// ResumeGroup undoes PauseGroup.
func (s *Scheduler) ResumeGroup(group string) { s.pause(group, false) }

func (s *Scheduler) pause(name string, paused bool) {
	s.mu.Lock()
	s.setPaused(s.c.group(name), paused)
	s.unlockAndLaunch(s.commit())
}

func (s *Scheduler) setPaused(g *group, paused bool) {
	if g.paused == paused {
		return
	}
	g.paused = paused
	if !paused {
		s.c.release(g)
	}
	s.c.allocDirty, s.c.allocReason = true, ReasonPause
}

// Snapshot describes the pending jobs, the groups and the keys.
func (s *Scheduler) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.snapshot(s.now())
}

// Collectors are the scheduler's Prometheus metrics, for the caller to
// register: queue wait, pending jobs by effective tier, aging promotions,
// group allocation and utilisation, redistributed slots.
func (s *Scheduler) Collectors() []prometheus.Collector { return s.m.collectors() }

// Close refuses new jobs, resumes paused groups, and waits until every
// job already submitted has run: no job is dropped. It must not be called
// from a job. Calling it again returns nil.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, g := range s.c.glist {
		s.setPaused(g, false)
	}
	s.unlockAndLaunch(s.commit())
	s.mu.Lock()
	for s.c.nPending+s.c.nRunning > 0 {
		s.idle.Wait()
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.jobs.Wait()
	return nil
}
