package jobs

import (
	"context"
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
	seq     uint64
	tid     tid
	js      *jobState
	typ     *typeState
	keyName string
	grpName string
	key     *fkey
	grp     *group
	weight  float64 // w of Smith's rule
	r       float64 // cost estimate in ms when enqueued
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
	nextAge    time.Time
	readyAt    time.Time // end of a retry backoff
	st         state
	reason     string // why it is parked
	node       *keyNode
	idx        int // in node.jobs
	timerIdx   int
	urgIdx     int
	delayIdx   int
	startIdx   int

	// Set at admission.
	charged  float64 // seconds charged to the key
	startTag float64 // the key's virtual time when admitted
	start    time.Time

	// Execution, owned by the Scheduler.
	run      Func
	retry    Retry
	attempts int
	ctx      context.Context
	cancel   context.CancelFunc
	owners   int           // Submit calls and RunSync callers still interested
	done     chan struct{} // made for the first RunSync caller
	err      error
	body     atomic.Bool // the body started (tells a refused launch apart)
}

// ref describes e for the caller.
func (e *entry) ref() JobRef {
	return JobRef{Type: e.tid.typ, ID: e.tid.id, Key: e.keyName, Group: e.grpName}
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
