package jobs

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Func is a job's body. It runs as a fairly thread: c lets it Spawn and
// Join parallel work and Await its blocking calls, so that waiting on the
// network or the disk does not hold a processor (a RunSync from inside a
// job is such a blocking call). ctx is cancelled when every caller waiting
// for the job has given up, or when Shutdown's context ends; it is also
// c.Context(), so the thread's own waits (Join, Sleep, AwaitContext) and
// the threads it spawns see the cancellation.
type Func func(ctx context.Context, c *thread.Ctx) error

// Handler is the body of a job type's jobs (TypeConfig.Handler): it gets
// the job's ID and payload, and runs as a Func does.
type Handler func(ctx context.Context, c *thread.Ctx, id string, payload []byte) error

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
	// Run is the job's body; nil runs its type's Handler with Payload.
	// With a durable Config.Store it must be nil: a stored job's body is
	// its type's Handler.
	Run Func
	// Payload is what the type's Handler gets; a durable store keeps it.
	Payload []byte
	// Retry runs the job again when it fails; the zero value does not.
	Retry Retry
}

// JobRef names a job, for reports such as the jobs Shutdown dropped.
type JobRef struct {
	Type  JobType
	ID    string
	Key   string
	Group string
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
	e.body.Store(false)
	// The thread reports its own end (no goroutine waits for it); only a
	// thread the runtime refused, which never runs, is finished here. The
	// job's context is the thread's, so c.Context() is the ctx the body
	// gets, and the thread's waits (Join, Sleep, AwaitContext) end when
	// the job is cancelled.
	h := thread.GoContext(&e.ctx, l.rt, l.prio[e.base], func(c *thread.Ctx) error {
		e.body.Store(true)
		s.runBody(e, c)
		return nil
	})
	if h.Done() && !e.body.Load() {
		_, err := h.Wait()
		// On its own goroutine: finishing admits the next job, which the
		// runtime refuses too, and so on through the whole backlog.
		go s.ended(e, err)
	}
}

// ended reports the end of a run started here: to the admission core,
// or, for a job that another process's scheduler admitted, to the store.
func (s *Scheduler) ended(e *entry, err error) {
	if e.remote != nil {
		e.remote.ran(e, err)
		return
	}
	s.finish(e, err)
}

// runBody runs e's body and reports its end, a panic or runtime.Goexit
// included.
func (s *Scheduler) runBody(e *entry, c *thread.Ctx) {
	var err error
	returned := false
	defer func() {
		if r := recover(); r != nil {
			err = &thread.PanicError{Value: r, Stack: debug.Stack()}
		} else if !returned {
			err = thread.ErrGoexit
		}
		s.ended(e, err)
	}()
	if e.run != nil {
		err = e.run(&e.ctx, c)
	} else {
		err = e.typ.cfg.Handler(&e.ctx, c, e.tid.id, e.payload)
	}
	returned = true
}

// Scheduler admits coarse jobs by one ordering (see the package
// documentation) and runs them on a fairly runtime. Its methods are safe
// for concurrent use.
type Scheduler struct {
	mu sync.Mutex
	c  *core // replaced by a cluster's leader when it takes over (cluster.go)
	// set and types, read without mu: the configuration, and the types'
	// states of the first core (a cluster reads only their configuration
	// through them; a single process never replaces its core).
	set      *settings
	types    map[JobType]*typeState
	run      launcher
	closing  bool // Close or Shutdown began: no new jobs
	dropping bool // Shutdown began: pending jobs are dropped, none retried
	drained  chan struct{}
	shut     chan struct{} // closed when shutdown is complete
	timer    *time.Timer
	wakeAt   time.Time
	busy     sync.WaitGroup // launched jobs whose end is not fully handled
	j        *journal       // the durable store's writer; nil in memory
	cl       *cluster       // several processes on one PostgreSQL store
	st       *Store
	// recovered counts the jobs found running in the store at open.
	recovered int

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
	local := onFairly{rt: rt, prio: prio}
	if st := s.Store; st != nil && st.dialect == Postgres {
		return newCluster(s, local)
	}
	return newScheduler(s, local)
}

func newScheduler(s *settings, run launcher) (*Scheduler, error) {
	sc := &Scheduler{c: newCore(s), set: s, run: run, drained: make(chan struct{}), shut: make(chan struct{})}
	sc.types = sc.c.types
	if s.Store != nil && s.Store.dialect != Postgres {
		if err := sc.open(s.Store); err != nil {
			return nil, err
		}
		sc.Reschedule() // what came back starts at once
	}
	return sc, nil
}

func (s *Scheduler) now() time.Time { return s.set.Clock() }

// check validates a job against the configuration.
func (s *Scheduler) check(j Job) (*typeState, float64, error) {
	t, ok := s.types[j.Type]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrUnknownType, j.Type)
	}
	if j.Run == nil && t.cfg.Handler == nil {
		return nil, 0, fmt.Errorf("%w: %s %q has no Run and its type no Handler", ErrInvalidJob, j.Type, j.ID)
	}
	if j.Run != nil && (s.j != nil || s.cl != nil) {
		return nil, 0, fmt.Errorf("%w: %s %q: with a durable store a job's body is its type's Handler", ErrInvalidJob, j.Type, j.ID)
	}
	if j.Retry.Max < 0 || j.Retry.Backoff < 0 || j.Retry.MaxBackoff < 0 {
		return nil, 0, fmt.Errorf("%w: %s %q: negative retry setting", ErrInvalidJob, j.Type, j.ID)
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
// already pending or running joins that job: it runs once, with the first
// submission's body, key and group, and a RunSync caller that gives up no
// longer cancels it.
func (s *Scheduler) Submit(j Job) error {
	if s.cl != nil {
		_, w, err := s.check(j)
		if err != nil {
			return err
		}
		return s.cl.submit(context.Background(), j, w, false)
	}
	_, err := s.enter(j, false)
	return err
}

// RunSync queues j and waits until it has run, returning its error. A
// RunSync of a (type, id) that is already pending or running joins that
// job and returns its result. If ctx ends first, RunSync returns
// ctx.Err(); a job nobody else waits for (no other RunSync caller, no
// Submit) is then withdrawn if still pending, or has its context cancelled
// if running. A nil ctx is an error (ErrInvalidJob), not a panic.
func (s *Scheduler) RunSync(ctx context.Context, j Job) error {
	if ctx == nil {
		return fmt.Errorf("%w: RunSync with a nil context", ErrInvalidJob)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.cl != nil {
		_, w, err := s.check(j)
		if err != nil {
			return err
		}
		return s.cl.submit(ctx, j, w, true)
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

func (s *Scheduler) enter(j Job, sync bool) (*entry, error) {
	t, w, err := s.check(j)
	if err != nil {
		return nil, err
	}
	id := tid{j.Type, j.ID}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	js := s.c.job(id)
	if e := js.current(); e != nil {
		e.owners++
		if sync && e.done == nil {
			e.done = make(chan struct{})
		}
		saved := e.saved
		s.mu.Unlock()
		return e, saved.wait()
	}
	e := &entry{tid: id, typ: t, weight: w, run: j.Run, payload: j.Payload, retry: j.Retry, owners: 1}
	if sync {
		e.done = make(chan struct{})
	}
	e.js = js
	s.c.enqueue(e, j.Key, j.Group, s.now())
	if s.j != nil {
		e.saved = s.j.put(e)
	}
	saved := e.saved
	s.unlockAndLaunch(s.commit())
	return e, saved.wait()
}

// wait waits until b has committed and returns its error; nil for no
// batch (no durable store).
func (b *commitBatch) wait() error {
	if b == nil {
		return nil
	}
	<-b.done
	return b.err
}

// end hands e's result to its callers; mu is held.
func (e *entry) end(err error) {
	e.err = err
	if e.done != nil {
		close(e.done)
	}
	e.ctx.cancel()
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
		e.ctx.cancel()
		s.mu.Unlock()
		return
	}
	s.c.remove(e)
	if s.j != nil {
		s.j.drop(e)
	}
	e.end(err)
	s.unlockAndLaunch(s.commit())
}

// finish records the end of a run: the job is done, or goes back to the
// queue for a retry.
func (s *Scheduler) finish(e *entry, err error) {
	s.mu.Lock()
	now := s.now()
	s.c.complete(e, max(now.Sub(e.start), 0), now)
	if err != nil && e.attempts < e.retry.Max && e.ctx.Err() == nil && !s.dropping {
		e.attempts++
		until := now.Add(e.retry.delay(e.attempts))
		if s.closing {
			until = now // Close drains: no backoff to wait out
		}
		s.c.hold(e, until)
		if s.j != nil {
			s.j.put(e)
		}
	} else {
		if s.j != nil {
			s.j.drop(e)
		}
		e.end(err)
	}
	if s.j != nil {
		s.j.learned(e, s.c.vnow)
	}
	s.unlockAndLaunch(s.commit())
	s.busy.Done()
}

// commit admits what can run and re-arms the wake-up timer; mu is held.
func (s *Scheduler) commit() []*entry {
	now := s.now()
	if s.cl != nil {
		return nil // the leader's tick admits (cluster.go)
	}
	admitted := s.c.dispatch(now)
	s.busy.Add(len(admitted))
	for _, e := range admitted {
		e.ctx.attempt++
		if s.j != nil {
			s.j.put(e)
		}
	}
	s.queueEvents()
	if s.closing && s.c.nPending+s.c.nRunning+s.c.nDelayed == 0 {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
		return admitted
	}
	if w := s.c.wake(); !w.IsZero() && !w.Equal(s.wakeAt) {
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

// queueEvents moves the core's events to the delivery queue; mu is held.
func (s *Scheduler) queueEvents() {
	if len(s.c.events) > 0 {
		s.evMu.Lock()
		s.evq = append(s.evq, s.c.events...)
		s.evMu.Unlock()
		s.c.events = s.c.events[:0]
	}
}

// tick runs when a job is due to age, a retry's backoff ends, or idle keys
// are to be forgotten.
func (s *Scheduler) tick() {
	s.mu.Lock()
	s.wakeAt = time.Time{}
	s.unlockAndLaunch(s.commit())
}

// Reschedule makes an admission decision now: it applies the aging steps,
// retry backoffs and TTL sweeps that are due by Config.Clock and admits
// what can run. The scheduler does this on its own on every submission and
// completion and on a real-time timer; with a fake clock, call it after
// moving the clock to make time-driven changes happen at once.
func (s *Scheduler) Reschedule() {
	s.mu.Lock()
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
		if f := s.set.OnEvent; f != nil {
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
	s.c.setWeight(s.c.group(group), weight, s.now())
	s.unlockAndLaunch(s.commit())
	return nil
}

// ResetGroupWeights gives every group the same weight,
// Config.DefaultGroupWeight, as the weighted-groups design's "reset to
// equal weights" says; configured weights are not restored (set them
// again with SetGroupWeight).
func (s *Scheduler) ResetGroupWeights() {
	s.mu.Lock()
	now := s.now()
	for _, g := range s.c.glist {
		s.c.setWeight(g, s.set.DefaultGroupWeight, now)
	}
	s.unlockAndLaunch(s.commit())
}

// PauseGroup stops admitting the group's jobs; its slots go to the other
// groups until ResumeGroup. Running jobs are not interrupted. The group's
// pending jobs do not age while it is paused.
func (s *Scheduler) PauseGroup(group string) { s.pause(group, true) }

// ResumeGroup undoes PauseGroup.
func (s *Scheduler) ResumeGroup(group string) { s.pause(group, false) }

func (s *Scheduler) pause(name string, paused bool) {
	s.mu.Lock()
	s.c.setPaused(s.c.group(name), paused, s.now())
	s.unlockAndLaunch(s.commit())
}

// Snapshot describes the pending jobs, the groups and the keys.
func (s *Scheduler) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.snapshot(s.now())
}

// MetricsSnapshot gives the scheduler's figures (queue wait, pending jobs
// by effective tier, aging promotions, group allocation and utilisation,
// redistributed slots); fairlyprom.NewJobsCollector exports them to
// Prometheus.
func (s *Scheduler) MetricsSnapshot() jobsmetrics.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.metrics()
}
