package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// The journal carries the scheduler's changes to its durable store with
// group commit. The scheduler records, under its own lock, the final image
// of each job, key and estimate it changed; one writer goroutine takes
// everything recorded so far and commits it in one transaction while the
// next changes accumulate. A Submit waits for the batch that holds its
// job. Only the final image of a row in a batch is written, so a job
// submitted, run and finished between two commits costs the store nothing
// but its key's charge and its estimate.
//
// Invariant: the store's image of a job is never ahead of memory and at
// most one batch behind, and batches commit in order, so after a crash the
// store holds every job whose Submit returned and that had not finished
// before the last commit: at least once.
type journal struct {
	st    *Store
	log   *slog.Logger
	every time.Duration // TTL sweep period
	ttl   time.Duration
	clock func() time.Time

	mu   sync.Mutex
	rows map[tid]*rowChange
	keys map[string]keyRow
	ests map[tid]estRow
	vnow float64
	setV bool
	cur  *commitBatch

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

// rowChange is the final image of a job in the batch being built.
type rowChange struct {
	r   row
	del bool
	// fresh: the row was not in the store before this batch, so deleting
	// it needs no statement.
	fresh bool
}

// commitBatch is one group commit; done is closed when it ends, err is
// then its outcome.
type commitBatch struct {
	done chan struct{}
	err  error
}

func newJournal(st *Store, s *settings) *journal {
	j := &journal{
		st: st, log: s.Logger, every: s.sweepEvery(), ttl: s.TTL, clock: s.Clock,
		rows: make(map[tid]*rowChange), keys: make(map[string]keyRow), ests: make(map[tid]estRow),
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go j.loop()
	return j
}

// batch is the batch being built; j.mu is held.
func (j *journal) batch() *commitBatch {
	if j.cur == nil {
		j.cur = &commitBatch{done: make(chan struct{})}
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return j.cur
}

// put records e's current state (pending, running or delayed, by e.st)
// and returns the batch that will commit it.
func (j *journal) put(e *entry) *commitBatch {
	r := rowOf(e)
	j.mu.Lock()
	defer j.mu.Unlock()
	if c, ok := j.rows[e.tid]; ok {
		c.r, c.del = r, false
	} else {
		j.rows[e.tid] = &rowChange{r: r, fresh: !e.stored}
	}
	e.stored = true
	return j.batch()
}

// drop records that e left the store (it finished or was withdrawn).
func (j *journal) drop(e *entry) {
	if !e.stored {
		return
	}
	e.stored = false
	j.mu.Lock()
	defer j.mu.Unlock()
	c, ok := j.rows[e.tid]
	switch {
	case ok && c.fresh:
		delete(j.rows, e.tid)
		return
	case ok:
		c.del = true
	default:
		j.rows[e.tid] = &rowChange{del: true}
	}
	j.batch()
}

// learned records a completion's effect on the key, the estimate and V.
func (j *journal) learned(e *entry, vnow float64) {
	k, js := e.key, e.js
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys[k.name] = keyRow{name: k.name, charge: k.charge, last: k.lastSeen.UnixNano()}
	j.ests[e.tid] = estRow{typ: string(e.tid.typ), id: e.tid.id, est: js.est, last: js.last.UnixNano()}
	j.vnow, j.setV = vnow, true
	j.batch()
}

// loop is the writer: it commits what was recorded, batch after batch.
func (j *journal) loop() {
	defer close(j.done)
	next := j.clock().Add(j.every)
	for {
		select {
		case <-j.kick:
		case <-j.quit:
			j.flush()
			return
		}
		j.flush()
		if now := j.clock(); !now.Before(next) {
			next = now.Add(j.every)
			if err := j.st.forget(context.Background(), j.st.db, now, j.ttl); err != nil && j.log != nil {
				j.log.Error("jobs.store", "err", err)
			}
		}
	}
}

// flush commits everything recorded so far.
func (j *journal) flush() {
	j.mu.Lock()
	b := j.cur
	if b == nil {
		j.mu.Unlock()
		return
	}
	im := &image{vnow: j.vnow, setV: j.setV}
	for id, c := range j.rows {
		if c.del {
			im.dels = append(im.dels, id)
		} else {
			im.rows = append(im.rows, c.r)
		}
	}
	for _, k := range j.keys {
		im.keys = append(im.keys, k)
	}
	for _, e := range j.ests {
		im.ests = append(im.ests, e)
	}
	clear(j.rows)
	clear(j.keys)
	clear(j.ests)
	j.setV, j.cur = false, nil
	j.mu.Unlock()
	b.err = j.st.write(context.Background(), im)
	if b.err != nil && j.log != nil {
		j.log.Error("jobs.store", "err", b.err)
	}
	close(b.done)
}

// stop commits what is left and ends the writer.
func (j *journal) stop() {
	select {
	case <-j.quit:
	default:
		close(j.quit)
	}
	<-j.done
}
