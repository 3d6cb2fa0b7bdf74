package jobs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// tid identifies a job: its type and its id.
type tid struct {
	typ JobType
	id  string
}

type state uint8

const (
	queued  state = iota // in its band, under its group and key
	urgentQ              // in the urgent queue
	parked               // set aside on a resource that blocks it
	delayed              // waiting out a retry backoff
	running
	finished
)

// entry is one job from submission to completion, retries included.
type entry struct {
	seq    uint64
	tid    tid
	js     *jobState
	typ    *typeState
	key    *fkey
	grp    *group
	weight float64 // w of Smith's rule
	// smith orders jobs of a key under Smith's rule: w/r + a·(now−sub) =
	// smith + a·now, and a·now is the same for every job, so the order
	// never changes while they wait.
	smith float64
	// submitted is the first submission: retries keep it, so a retried
	// job goes on aging from where it was.
	submitted time.Time
	// pausedBase is the group's paused time at submission: aging counts
	// only the time the group was not paused.
	pausedBase time.Duration
	base       int
	eff        int
	urgent     bool
	urgentAt   time.Time
	// nextAge is the next aging step, or the end of the retry backoff
	// while delayed (an entry is in at most one of those two heaps, so
	// they share it and timerIdx).
	nextAge  time.Time
	reason   string // why it is parked
	node     *keyNode
	idx      int32 // in node.jobs
	timerIdx int32 // in core.timers or core.delays
	urgIdx   int32
	startIdx int32
	st       state
	body     atomic.Bool // the body started (tells a refused launch apart)

	// Set at admission.
	charged  float64 // seconds charged to the key
	startTag float64 // the key's virtual time when admitted
	start    time.Time

	// Execution, owned by the Scheduler.
	run      Func // nil: the type's Handler with payload
	payload  []byte
	retry    Retry
	attempts int
	ctx      jobCtx
	owners   int           // Submit calls and RunSync callers still interested
	done     chan struct{} // made for the first RunSync caller
	err      error

	// With a durable store: stored is set once the job is recorded for
	// the store, saved is the commit that first records it.
	stored bool
	saved  *commitBatch
	// Several processes on one store: the node that runs the job (on the
	// admitting scheduler), and the cluster a run started here for
	// another process's admission reports to.
	owner  string
	remote *cluster
}

// ref describes e for the caller.
func (e *entry) ref() JobRef {
	return JobRef{Type: e.tid.typ, ID: e.tid.id, Key: e.key.name, Group: e.grp.name}
}

// jobState is what the scheduler knows of one (type, id): its pending or
// running job, and its learned cost. Entries point at it, so an admission
// or a completion needs no map look-up. A (type, id) has at most one job
// at a time: a second submission joins it (deduplication).
type jobState struct {
	pending *entry
	running *entry
	est     float64 // seconds, valid when known
	known   bool
	last    time.Time // last use of the estimate
}

// current is the job a new submission of this (type, id) joins, if any.
func (js *jobState) current() *entry {
	if js.pending != nil {
		return js.pending
	}
	return js.running
}

// jobCtx is a job's context, cancelled when every caller waiting for the
// job gives up or when Shutdown's context ends. It lives in the entry, so
// a job costs no context allocation; its channel is made only for a body
// that asks for Done.
type jobCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
	// attempt is the run number, set at admission (Attempt).
	attempt int
}

// attemptKey is the context key of Attempt.
type attemptKey struct{}

// Attempt is the run number of the job whose context ctx is, or that a
// thread of the job got from c.Context(): 1 for its first run, 2 for the
// second, whether the first failed and was retried or its process died
// while it ran (with a durable store). It is 0 outside a job.
func Attempt(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}

// closedChan is the Done channel of a context cancelled before anyone
// asked for it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Deadline implements context.Context: a job has none.
func (c *jobCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value implements context.Context: a job's context carries its
// attempt number, for Attempt.
func (c *jobCtx) Value(key any) any {
	if key == (attemptKey{}) {
		return c.attempt
	}
	return nil
}

// Err implements context.Context.
func (c *jobCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done implements context.Context.
func (c *jobCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *jobCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
}
