package jobs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Several processes, one fair order (a PostgreSQL store).
//
// One process at a time is the leader: it holds the row of fairly_leader
// (node, term, expires) and renews it in every one of its transactions.
// The leader keeps the admission core in memory, built from the store when
// it takes over, and is the only process that admits: so total slots,
// tier caps, type caps, conflicts, groups, keys' virtual times and aging
// are those of one core, whatever process a job was submitted to or runs
// on. Every process is a node: it renews its row of fairly_nodes, and runs
// the jobs the leader assigned to it (owner = node, state running).
//
// A tick of the leader is one transaction: renew the leadership (fencing:
// the UPDATE matches only the current node and term, and its row lock
// serialises leaders); note dead nodes (lease expired); take the new
// submissions (state new → pending); take the ends the nodes wrote
// (state done); requeue the running jobs of dead nodes, attempt counted;
// admit; write the assignments, retries, ends, charges and estimates. A
// leader that fails a tick steps down and forgets its core; whoever takes
// over next (itself included) rebuilds it from the store, which holds
// every decision that committed. A dead leader's transaction rolls back
// with its connection, and its lease lapses: the next leader takes over
// within a lease.
//
// A node's tick: renew its lease, write the ends of its runs (only where
// the row is still its own run: owner, attempt and state match, so a run
// the leader took back cannot overwrite the run that replaced it), start
// the runs assigned to it, and hand finished results to the RunSync
// callers waiting here. Submissions are group-committed by their own
// writer with INSERT … ON CONFLICT: a (type, id) that is already new,
// pending, running or in its backoff is joined, one that has finished is
// submitted again.
//
// Why a leader rather than every process admitting in one transaction:
// the fair order is global state (every key's virtual time, V, the group
// allocation, the aging heap, who holds each cap) that each admission
// reads and changes. Computed in SQL, every admission would read and lock
// all of it, so admissions would serialise on those rows anyway, each at
// the cost of a transaction; a leader decides at memory speed, batches a
// tick's decisions in one transaction, and needs the database only to
// make them durable and to hand them out. The price is a failover of up
// to one lease while the leader's process is dead.

// Submit-only nodes and polling.
const (
	busyPoll   = time.Millisecond       // between ticks while there is work
	idlePoll   = 20 * time.Millisecond  // between ticks when the last found none
	nodesEvery = 100 * time.Millisecond // the leader reads the live nodes at most this often
)

type cluster struct {
	s     *Scheduler
	st    *Store
	node  string
	local onFairly
	// From the configuration, read without the scheduler's lock (the
	// leader replaces its core when it takes over): only the types'
	// configurations and tiers are read through types.
	types map[JobType]*typeState
	set   *settings
	log   *slog.Logger
	clock func() time.Time

	// Submissions waiting for their group commit.
	subMu    sync.Mutex
	subs     map[tid]row
	subBatch *commitBatch
	subKick  chan struct{}

	// Runs started here and their ends not yet written; RunSync callers.
	wmu     sync.Mutex
	runs    map[tid]*entry
	ends    []endRow
	waiters map[tid][]chan error
	closing bool

	// Owned by the loop goroutine: the last renewal of the node's lease;
	// the leadership (the core is s.c, under s.mu), the live nodes and
	// when they were last read.
	beat     time.Time
	term     int64 // 0 when not the leader
	load     map[string]int
	live     map[string]bool
	seenAt   time.Time
	forgotAt time.Time // the last TTL sweep of the stored keys and estimates

	kick       chan struct{}
	quit       chan struct{}
	stopListen context.CancelFunc
	listening  atomic.Bool // the listener's connection is up
	done       sync.WaitGroup
}

// endRow is the end of a run, as a node reports it.
type endRow struct {
	typ, id string
	runs    int
	failed  bool
	result  string
	elapsed time.Duration
}

func newCluster(s *settings, local onFairly) (*Scheduler, error) {
	sc, err := newScheduler(s, remote{})
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	cl := &cluster{
		s: sc, st: s.Store, node: hex.EncodeToString(id), local: local,
		types: sc.types, set: s, log: s.Logger, clock: s.Clock,
		subs: make(map[tid]row), subKick: make(chan struct{}, 1),
		runs: make(map[tid]*entry), waiters: make(map[tid][]chan error),
		load: make(map[string]int), kick: make(chan struct{}, 1), quit: make(chan struct{}),
	}
	sc.cl = cl
	cl.done.Add(2)
	go cl.writeSubmissions()
	go cl.loop()
	if listen := s.Store.listen; listen != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cl.stopListen = cancel
		cl.done.Add(1)
		go func() {
			defer cl.done.Done()
			for ctx.Err() == nil {
				if err := listen(ctx, cl.node, cl.listenWake); err != nil && ctx.Err() == nil {
					cl.listening.Store(false)
					cl.logErr(err)
					time.Sleep(idlePoll)
				}
			}
		}()
	}
	return sc, nil
}

// remote is the leader's launcher: an admitted job is assigned to a node
// in the leader's tick, not started here.
type remote struct{}

func (remote) launch(*Scheduler, *entry) {}

func (cl *cluster) logErr(err error) {
	if cl.log != nil && err != nil {
		cl.log.Error("jobs.cluster", "node", cl.node, "err", err)
	}
}

// submit records j for the next group commit and waits for it; with
// sync, it then waits for the job's result or ctx.
func (cl *cluster) submit(ctx context.Context, j Job, w float64, sync bool) error {
	cl.wmu.Lock()
	closing := cl.closing
	cl.wmu.Unlock()
	if closing {
		return ErrClosed
	}
	now := cl.clock()
	r := row{
		typ: string(j.Type), id: j.ID, key: j.Key, grp: j.Group, weight: w, payload: j.Payload,
		submitted: now.UnixNano(), state: rowNew, retry: j.Retry,
	}
	id := tid{j.Type, j.ID}
	cl.subMu.Lock()
	if _, ok := cl.subs[id]; !ok {
		cl.subs[id] = r
	}
	if cl.subBatch == nil {
		cl.subBatch = &commitBatch{done: make(chan struct{})}
		select {
		case cl.subKick <- struct{}{}:
		default:
		}
	}
	b := cl.subBatch
	cl.subMu.Unlock()
	if err := b.wait(); err != nil || !sync {
		return err
	}
	ch := make(chan error, 1)
	cl.wmu.Lock()
	cl.waiters[id] = append(cl.waiters[id], ch)
	cl.wmu.Unlock()
	cl.wake()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		cl.wmu.Lock()
		ws := cl.waiters[id]
		for i, c := range ws {
			if c == ch {
				cl.waiters[id] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(cl.waiters[id]) == 0 {
			delete(cl.waiters, id)
		}
		cl.wmu.Unlock()
		return ctx.Err()
	}
}

// listenWake is the listener's wake-up; the first says it is listening.
func (cl *cluster) listenWake() {
	cl.listening.Store(true)
	cl.wake()
}

func (cl *cluster) wake() {
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

// submitJob inserts new jobs and notifies the leader, in one round trip.
const submitJob = `WITH i AS (INSERT INTO fairly_jobs (` + jobCols + `) ` + unnestJobs + `
	ON CONFLICT (type, id) DO UPDATE SET key = excluded.key, grp = excluded.grp,
	weight = excluded.weight, payload = excluded.payload, submitted = excluded.submitted,
	state = excluded.state, runs = 0, failures = 0, retry_max = excluded.retry_max,
	retry_backoff = excluded.retry_backoff, retry_max_backoff = excluded.retry_max_backoff,
	until = 0, owner = '', failed = false, result = ''
	WHERE fairly_jobs.state = 5)
	SELECT pg_notify('fairly_jobs', '')`

// writeSubmissions is the submissions' group-commit writer.
func (cl *cluster) writeSubmissions() {
	defer cl.done.Done()
	for {
		select {
		case <-cl.subKick:
		case <-cl.quit:
			return
		}
		cl.subMu.Lock()
		b, subs := cl.subBatch, cl.subs
		cl.subBatch, cl.subs = nil, make(map[tid]row)
		cl.subMu.Unlock()
		if b == nil {
			continue
		}
		rows := make([]row, 0, len(subs))
		for _, r := range subs {
			rows = append(rows, r)
		}
		_, err := cl.st.db.ExecContext(context.Background(), submitJob, columns(rows)...)
		if err != nil {
			b.err = fmt.Errorf("%w: %w", ErrStore, err)
			cl.logErr(b.err)
		}
		close(b.done)
		cl.wake()
	}
}

// loop ticks the node and, when it is or can become the leader, the
// leader, until quit.
func (cl *cluster) loop() {
	defer cl.done.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-cl.quit:
			return
		case <-cl.kick:
		case <-t.C:
		}
		worked, err := cl.work(context.Background())
		cl.logErr(err)
		led, err := cl.lead(context.Background())
		if err != nil {
			cl.logErr(err)
			cl.stepDown()
		}
		wait := idlePoll
		if worked || led {
			wait = busyPoll
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// work is a node's tick: lease, ends, new runs, results for waiters. It
// reports whether it found anything to do.
func (cl *cluster) work(ctx context.Context) (bool, error) {
	db := cl.st.db
	now := time.Now()
	exp := now.Add(cl.st.lease).UnixNano()
	cl.wmu.Lock()
	// A node whose listener is down could die unseen: it stops taking
	// work until it listens again.
	closing := cl.closing || cl.st.listen != nil && !cl.listening.Load()
	ends := cl.ends
	cl.ends = nil
	cl.wmu.Unlock()
	if !closing && now.Sub(cl.beat) >= cl.st.lease/4 {
		if _, err := db.ExecContext(ctx, `INSERT INTO fairly_nodes (id, expires) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET expires = excluded.expires`, cl.node, exp); err != nil {
			cl.requeueEnds(ends)
			return false, err
		}
		cl.beat = now
	}
	worked := len(ends) > 0
	if len(ends) > 0 {
		n := len(ends)
		typ, id, result := make([]string, n), make([]string, n), make([]string, n)
		runs, failed, elapsed := make([]int32, n), make([]bool, n), make([]int64, n)
		for i, e := range ends {
			typ[i], id[i], result[i], runs[i], failed[i], elapsed[i] = e.typ, e.id, e.result, int32(e.runs), e.failed, int64(e.elapsed)
		}
		// On the store's asynchronous connections: a PostgreSQL crash may
		// lose the last ends, and those jobs run again (at least once);
		// a run never overlaps another, since it had ended.
		if _, err := cl.st.async().ExecContext(ctx, `WITH u AS (UPDATE fairly_jobs j SET state = 4,
				failed = u.failed, result = u.result, elapsed = u.elapsed
			FROM unnest($1::text[], $2::text[], $3::int4[], $4::bool[], $5::text[], $6::int8[])
				AS u(type, id, runs, failed, result, elapsed)
			WHERE j.type = u.type AND j.id = u.id AND j.runs = u.runs AND j.owner = $7 AND j.state = 2
			RETURNING 1)
			SELECT pg_notify('fairly_jobs', '') WHERE EXISTS (SELECT 1 FROM u)`,
			typ, id, runs, failed, result, elapsed, cl.node); err != nil {
			cl.requeueEnds(ends)
			return worked, err
		}
		cl.wmu.Lock()
		for _, end := range ends {
			k := tid{JobType(end.typ), end.id}
			if e := cl.runs[k]; e != nil && e.st == finished && e.ctx.attempt == end.runs {
				delete(cl.runs, k)
			}
		}
		cl.wmu.Unlock()
	}
	if !closing {
		rs, err := db.QueryContext(ctx, `SELECT type, id, payload, runs FROM fairly_jobs
			WHERE owner = $1 AND state = 2`, cl.node)
		if err != nil {
			return worked, err
		}
		var start []*entry
		cl.wmu.Lock()
		for rs.Next() {
			var typ, id string
			var payload []byte
			var runs int
			if err := rs.Scan(&typ, &id, &payload, &runs); err != nil {
				cl.wmu.Unlock()
				rs.Close()
				return worked, err
			}
			t, ok := cl.types[JobType(typ)]
			k := tid{JobType(typ), id}
			if !ok || cl.runs[k] != nil {
				continue
			}
			e := &entry{tid: k, typ: t, base: t.tier, payload: payload, remote: cl, start: time.Now()}
			e.ctx.attempt = runs
			cl.runs[k] = e
			start = append(start, e)
		}
		cl.wmu.Unlock()
		if err := rs.Err(); err != nil {
			return worked, err
		}
		for _, e := range start {
			cl.local.launch(cl.s, e)
		}
		worked = worked || len(start) > 0
	}
	return worked, cl.answer(ctx)
}

// requeueEnds keeps ends that could not be written for the next tick.
func (cl *cluster) requeueEnds(ends []endRow) {
	cl.wmu.Lock()
	cl.ends = append(ends, cl.ends...)
	cl.wmu.Unlock()
}

// ran records the end of a run started here.
func (cl *cluster) ran(e *entry, err error) {
	end := endRow{typ: string(e.tid.typ), id: e.tid.id, runs: e.ctx.attempt,
		failed: err != nil, elapsed: time.Since(e.start)}
	if err != nil {
		end.result = err.Error()
	}
	cl.wmu.Lock()
	// It stays in runs until its end is written, so that a tick that
	// still finds its row running does not start it again.
	e.st = finished
	cl.ends = append(cl.ends, end)
	cl.wmu.Unlock()
	cl.wake()
}

// answer hands finished jobs' results to the RunSync callers here.
func (cl *cluster) answer(ctx context.Context) error {
	cl.wmu.Lock()
	var typ, id []string
	for k := range cl.waiters {
		typ, id = append(typ, string(k.typ)), append(id, k.id)
	}
	cl.wmu.Unlock()
	if len(typ) == 0 {
		return nil
	}
	rs, err := cl.st.db.QueryContext(ctx, `SELECT u.type, u.id, coalesce(j.state, 5), coalesce(j.failed, false),
		coalesce(j.result, '') FROM unnest($1::text[], $2::text[]) AS u(type, id)
		LEFT JOIN fairly_jobs j ON j.type = u.type AND j.id = u.id`, typ, id)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var t, i, result string
		var state int
		var failed bool
		if err := rs.Scan(&t, &i, &state, &failed, &result); err != nil {
			return err
		}
		if state != rowFinished {
			continue
		}
		var res error
		if failed {
			res = errors.New(result)
		}
		k := tid{JobType(t), i}
		cl.wmu.Lock()
		for _, ch := range cl.waiters[k] {
			ch <- res
		}
		delete(cl.waiters, k)
		cl.wmu.Unlock()
	}
	return rs.Err()
}

// stepDown forgets the leader's core; the next leader rebuilds it.
func (cl *cluster) stepDown() {
	if cl.term == 0 {
		return
	}
	cl.term, cl.live = 0, nil
	cl.s.mu.Lock()
	cl.s.c = newCore(cl.s.set)
	cl.s.mu.Unlock()
	clear(cl.load)
}

// lead is the leader's tick, one transaction; it reports whether it
// changed anything. A node that is not the leader takes over when the
// leader's lease has lapsed.
func (cl *cluster) lead(ctx context.Context) (bool, error) {
	cl.wmu.Lock()
	closing := cl.closing
	cl.wmu.Unlock()
	if closing {
		return false, nil
	}
	db := cl.st.db
	now := time.Now()
	exp := now.Add(cl.st.lease).UnixNano()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if cl.term == 0 {
		if cl.st.listen != nil && !cl.listening.Load() {
			return false, nil // the others could not see this node die
		}
		cond := `expires < $3 OR node = $1`
		if cl.st.listen != nil {
			cond += ` OR NOT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE application_name = 'fairly-' || fairly_leader.node)`
		}
		err := tx.QueryRowContext(ctx, `UPDATE fairly_leader SET node = $1, term = term + 1, expires = $2
			WHERE one = 1 AND (`+cond+`) RETURNING term`, cl.node, exp, now.UnixNano()).Scan(&cl.term)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if err := cl.takeOver(ctx, tx, now); err != nil {
			return false, err
		}
	} else {
		res, err := tx.ExecContext(ctx, `UPDATE fairly_leader SET expires = $1
			WHERE one = 1 AND node = $2 AND term = $3`, exp, cl.node, cl.term)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return false, fmt.Errorf("%w: leadership lost (term %d)", ErrStore, cl.term)
		}
	}

	if cl.live == nil || now.Sub(cl.seenAt) >= min(cl.st.lease/4, nodesEvery) {
		if cl.live, err = cl.nodes(ctx, tx, now); err != nil {
			return false, err
		}
		cl.seenAt = now
		if _, err := tx.ExecContext(ctx, `DELETE FROM fairly_jobs WHERE state = 5 AND until < $1`,
			now.Add(-cl.st.lease).UnixNano()); err != nil {
			return false, err
		}
		if now.After(cl.forgotAt.Add(cl.set.sweepEvery())) {
			if err := cl.st.forget(ctx, tx, now, cl.set.TTL); err != nil {
				return false, err
			}
			cl.forgotAt = now
		}
	}
	live := cl.live
	fresh, err := scanRows(tx.QueryContext(ctx, `UPDATE fairly_jobs SET state = 1 WHERE state = 0
		RETURNING `+jobCols))
	if err != nil {
		return false, err
	}
	type doneRow struct {
		k       tid
		runs    int
		failed  bool
		result  string
		elapsed time.Duration
	}
	var dones []doneRow
	// Every end is taken as final here; a retry's row is written again
	// below, in this transaction.
	rs, err := tx.QueryContext(ctx, `UPDATE fairly_jobs SET state = 5, until = $1, owner = '' WHERE state = 4
		RETURNING type, id, runs, failed, result, elapsed`, now.UnixNano())
	if err != nil {
		return false, err
	}
	for rs.Next() {
		var d doneRow
		var typ string
		var elapsed int64
		if err := rs.Scan(&typ, &d.k.id, &d.runs, &d.failed, &d.result, &elapsed); err != nil {
			rs.Close()
			return false, err
		}
		d.k.typ, d.elapsed = JobType(typ), time.Duration(elapsed)
		dones = append(dones, d)
	}
	if err := rs.Err(); err != nil {
		return false, err
	}

	s := cl.s
	im := &tickImage{}
	s.mu.Lock()
	c := s.c
	for _, r := range fresh {
		e := c.entryOf(r, now)
		if e == nil {
			continue
		}
		if js := e.js; js.current() != nil {
			continue // joined: a (type, id) has one job at a time
		}
		c.enqueue(e, r.key, r.grp, now)
	}
	for _, d := range dones {
		js := c.jobs[d.k]
		if js == nil || js.running == nil || js.running.ctx.attempt != d.runs {
			continue // not this core's run: its row is finished all the same
		}
		e := js.running
		cl.load[e.owner]--
		c.complete(e, d.elapsed, now)
		if d.failed && e.attempts < e.retry.Max {
			e.attempts++
			e.owner = ""
			c.hold(e, now.Add(e.retry.delay(e.attempts)))
			im.put(rowOf(e))
		}
		im.learned(e)
	}
	var dead []*entry
	for _, e := range c.starts.items {
		if !live[e.owner] {
			dead = append(dead, e)
		}
	}
	for _, e := range dead {
		cl.load[e.owner]--
		c.complete(e, now.Sub(e.start), now)
		e.owner = ""
		c.enqueue(e, e.key.name, e.grp.name, now)
		im.put(rowOf(e))
		im.learned(e)
		s.recovered++
	}
	admitted := 0
	if len(live) > 0 {
		for _, e := range c.dispatch(now) {
			e.ctx.attempt++
			e.owner = cl.pick(live)
			cl.load[e.owner]++
			im.put(rowOf(e))
			admitted++
		}
	}
	im.vnow = c.vnow
	s.queueEvents()
	s.mu.Unlock()
	s.deliver()

	if err := cl.st.writeTx(ctx, tx, im.image(), admitted > 0 || len(dones) > 0); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return len(fresh)+len(dones)+len(dead)+admitted > 0, nil
}

// tickImage collects a leader's tick's writes, one image per row, key
// and estimate (PostgreSQL refuses to upsert one row twice in a
// statement).
type tickImage struct {
	rows map[tid]row
	keys map[string]keyRow
	ests map[tid]estRow
	vnow float64
}

func (im *tickImage) put(r row) {
	if im.rows == nil {
		im.rows = make(map[tid]row)
	}
	im.rows[tid{JobType(r.typ), r.id}] = r
}

// learned records a completion's effect on its key and estimate.
func (im *tickImage) learned(e *entry) {
	if im.keys == nil {
		im.keys, im.ests = make(map[string]keyRow), make(map[tid]estRow)
	}
	k, js := e.key, e.js
	im.keys[k.name] = keyRow{name: k.name, charge: k.charge, last: k.lastSeen.UnixNano()}
	im.ests[e.tid] = estRow{typ: string(e.tid.typ), id: e.tid.id, est: js.est, last: js.last.UnixNano()}
}

func (im *tickImage) image() *image {
	out := &image{vnow: im.vnow, setV: true}
	for _, r := range im.rows {
		out.rows = append(out.rows, r)
	}
	for _, k := range im.keys {
		out.keys = append(out.keys, k)
	}
	for _, e := range im.ests {
		out.ests = append(out.ests, e)
	}
	return out
}

// pick is the live node with the fewest running jobs.
func (cl *cluster) pick(live map[string]bool) string {
	best, n := "", 0
	for node := range live {
		if l := cl.load[node]; best == "" || l < n || l == n && node < best {
			best, n = node, l
		}
	}
	return best
}

// nodes lists the live nodes and forgets the dead ones.
func (cl *cluster) nodes(ctx context.Context, tx *sql.Tx, now time.Time) (map[string]bool, error) {
	q := `SELECT id, expires, true FROM fairly_nodes`
	if cl.st.listen != nil {
		q = `SELECT id, expires, EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE application_name = 'fairly-' || fairly_nodes.id) FROM fairly_nodes`
	}
	rs, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool)
	var gone []string
	for rs.Next() {
		var id string
		var exp int64
		var connected bool
		if err := rs.Scan(&id, &exp, &connected); err != nil {
			rs.Close()
			return nil, err
		}
		switch {
		case exp >= now.UnixNano() && connected:
			live[id] = true
		case !connected:
			gone = append(gone, id)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM fairly_nodes WHERE expires < $1 OR id = ANY($2::text[])`,
		now.UnixNano(), gone)
	return live, err
}

// takeOver rebuilds the core from the store for a new leader: running
// jobs (and ended ones whose end the old leader had not taken) are running
// again on their owners, whose liveness this tick then checks.
func (cl *cluster) takeOver(ctx context.Context, tx *sql.Tx, now time.Time) error {
	got, err := cl.st.load(ctx, tx)
	if err != nil {
		return err
	}
	s := cl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := newCore(s.set)
	s.c = c
	clear(cl.load)
	c.restoreLearned(got, now)
	for _, r := range got.rows {
		if r.state == rowNew || r.state == rowFinished {
			continue
		}
		e := c.entryOf(r, now)
		switch {
		case e == nil:
		case r.state == rowDelayed:
			c.hold(e, time.Unix(0, r.until))
		case r.state == rowPending:
			c.enqueue(e, r.key, r.grp, now)
		default:
			c.enqueue(e, r.key, r.grp, now)
			c.unplace(e)
			c.admit(e, now)
			cl.load[e.owner]++
		}
	}
	return nil
}

// scanRows reads fairly_jobs rows in jobCols order.
func scanRows(rs *sql.Rows, err error) ([]row, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		var backoff, maxBackoff int64
		if err := rs.Scan(&r.typ, &r.id, &r.key, &r.grp, &r.weight, &r.payload, &r.submitted,
			&r.state, &r.runs, &r.failures, &r.retry.Max, &backoff, &maxBackoff, &r.until, &r.owner); err != nil {
			return nil, err
		}
		r.retry.Backoff, r.retry.MaxBackoff = time.Duration(backoff), time.Duration(maxBackoff)
		out = append(out, r)
	}
	return out, rs.Err()
}

// close ends this process's part: no new submissions, the runs started
// here finish (their contexts are cancelled when ctx ends first) and
// their ends are written, then the node leaves, and the leadership, if
// held, lapses at once so another node takes over. Pending jobs stay in
// the store for the other processes.
func (cl *cluster) close(ctx context.Context) error {
	cl.wmu.Lock()
	already := cl.closing
	cl.closing = true
	cl.wmu.Unlock()
	if already {
		cl.done.Wait()
		return nil
	}
	cl.s.mu.Lock()
	cl.s.closing = true
	cl.s.mu.Unlock()
	var err error
	for {
		cl.wmu.Lock()
		n := 0
		for _, e := range cl.runs {
			if e.st != finished {
				n++
			}
		}
		if ctx.Err() != nil && err == nil {
			err = ctx.Err()
			for _, e := range cl.runs {
				e.ctx.cancel()
			}
		}
		cl.wmu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(busyPoll)
	}
	bg := context.Background()
	if _, werr := cl.work(bg); werr != nil {
		cl.logErr(werr)
	}
	close(cl.quit)
	if cl.stopListen != nil {
		cl.stopListen()
	}
	cl.done.Wait()
	db := cl.st.db
	if _, derr := db.ExecContext(bg, `DELETE FROM fairly_nodes WHERE id = $1`, cl.node); derr != nil {
		cl.logErr(derr)
	}
	if cl.term != 0 {
		if _, derr := db.ExecContext(bg, `UPDATE fairly_leader SET expires = 0 WHERE node = $1 AND term = $2`,
			cl.node, cl.term); derr != nil {
			cl.logErr(derr)
		}
	}
	cl.wmu.Lock()
	for k, ws := range cl.waiters {
		for _, ch := range ws {
			ch <- ErrClosed
		}
		delete(cl.waiters, k)
	}
	cl.wmu.Unlock()
	return err
}
