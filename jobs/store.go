package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrStore reports a failure of the durable store (a commit, a load); it
// wraps the database's error.
var ErrStore = errors.New("jobs: store")

// Dialect is the SQL a Store's database speaks.
type Dialect int

// The dialects a Store speaks.
const (
	SQLite Dialect = iota + 1
	Postgres
)

// Store keeps a scheduler's jobs (type, ID, payload and scheduling
// fields), its keys' charges, its learned estimates and its system
// virtual time in a database, so that they survive the process. Open one
// with sqlitestore.Open or pgstore.Open, and give it to Config.Store. A
// Store serves one Scheduler at a time.
type Store struct {
	db      *sql.DB
	dialect Dialect
	// lease is how long a process's claim on its running jobs and on the
	// leadership lasts without renewal (Postgres, several processes).
	lease time.Duration
	mu    sync.Mutex
	// owned is set while a Scheduler uses the store.
	owned   bool
	listen  func(ctx context.Context, node string, wake func()) error
	asyncDB *sql.DB
}

// StoreOptions tunes a Store.
type StoreOptions struct {
	// Lease is how long a process that stopped renewing keeps its slots
	// and running jobs before the others take them back (several
	// processes on one PostgreSQL database); 0 means DefaultLease.
	Lease time.Duration
	// Listen, if set, calls wake whenever another process may have
	// changed the store, until ctx ends or the connection fails
	// (PostgreSQL's LISTEN on the channel fairly_jobs; pgstore sets it).
	// Its connection's application_name is "fairly-" + node while it
	// listens: the other processes take that connection's end as the end
	// of the process, at once, without waiting out its lease. Without
	// Listen, the processes of a cluster poll and wait out leases.
	Listen func(ctx context.Context, node string, wake func()) error
	// Async, if set, is the same database on connections whose commits
	// do not wait for the disk (PostgreSQL's synchronous_commit off). A
	// cluster writes the ends of runs through it: a crash of the database
	// server may lose the last of them, and those jobs then run again, as
	// at least once allows; no run overlaps another, since they had ended.
	// Submissions and admissions always wait for the disk. NewStore's
	// Close closes it.
	Async *sql.DB
}

// DefaultLease is StoreOptions.Lease's default.
const DefaultLease = 2 * time.Second

// NewStore makes a Store on db, whose driver speaks dialect, and creates
// its tables if they do not exist. sqlitestore.Open and pgstore.Open call
// it; Close closes db.
func NewStore(ctx context.Context, db *sql.DB, dialect Dialect, opts StoreOptions) (*Store, error) {
	if db == nil || (dialect != SQLite && dialect != Postgres) {
		return nil, invalid("NewStore needs a database and a known dialect")
	}
	if opts.Lease < 0 {
		return nil, invalid("negative lease")
	}
	st := &Store{db: db, dialect: dialect, lease: opts.Lease, listen: opts.Listen, asyncDB: opts.Async}
	if st.lease == 0 {
		st.lease = DefaultLease
	}
	blob := "BLOB"
	if dialect == Postgres {
		blob = "BYTEA"
	}
	schema := []string{
		`CREATE TABLE IF NOT EXISTS fairly_jobs (
			type TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, grp TEXT NOT NULL,
			weight DOUBLE PRECISION NOT NULL, payload ` + blob + `,
			submitted BIGINT NOT NULL, state INTEGER NOT NULL, runs INTEGER NOT NULL,
			failures INTEGER NOT NULL, retry_max INTEGER NOT NULL, retry_backoff BIGINT NOT NULL,
			retry_max_backoff BIGINT NOT NULL, until BIGINT NOT NULL, owner TEXT NOT NULL,
			elapsed BIGINT NOT NULL DEFAULT 0, failed BOOLEAN NOT NULL DEFAULT false,
			result TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (type, id))`,
		`CREATE TABLE IF NOT EXISTS fairly_keys (
			name TEXT PRIMARY KEY, charge DOUBLE PRECISION NOT NULL, last BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS fairly_estimates (
			type TEXT NOT NULL, id TEXT NOT NULL, est DOUBLE PRECISION NOT NULL, last BIGINT NOT NULL,
			PRIMARY KEY (type, id))`,
		`CREATE TABLE IF NOT EXISTS fairly_meta (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS fairly_nodes (id TEXT PRIMARY KEY, expires BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS fairly_leader (
			one INTEGER PRIMARY KEY, node TEXT NOT NULL, term BIGINT NOT NULL, expires BIGINT NOT NULL)`,
		`INSERT INTO fairly_leader (one, node, term, expires) VALUES (1, '', 0, 0) ON CONFLICT (one) DO NOTHING`,
		// What the ticks of a cluster look for (cluster.go), without a scan.
		`CREATE INDEX IF NOT EXISTS fairly_jobs_news ON fairly_jobs (state) WHERE state IN (0, 4, 5)`,
		`CREATE INDEX IF NOT EXISTS fairly_jobs_owned ON fairly_jobs (owner) WHERE state = 2`,
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: creating tables: %w", ErrStore, err)
	}
	if dialect == Postgres {
		// Processes starting together would race to create the tables.
		schema = append([]string{`SELECT pg_advisory_xact_lock(7242011)`}, schema...)
	}
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			_ = tx.Rollback()
			return nil, fmt.Errorf("%w: creating tables: %w", ErrStore, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("%w: creating tables: %w", ErrStore, err)
	}
	return st, nil
}

// Close closes the store's database.
func (st *Store) Close() error {
	if st.asyncDB != nil {
		st.asyncDB.Close()
	}
	return st.db.Close()
}

// async is the database for commits that may be lost in a crash of the
// database server without harm (see StoreOptions.Async).
func (st *Store) async() *sql.DB {
	if st.asyncDB != nil {
		return st.asyncDB
	}
	return st.db
}

// DB is the store's database, for inspection (tests, tools).
func (st *Store) DB() *sql.DB { return st.db }

// bind rewrites the ? placeholders of q for the dialect.
func (st *Store) bind(q string) string {
	if st.dialect != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Row states of fairly_jobs.
const (
	rowNew      = 0 // submitted to a cluster; the leader has not seen it yet
	rowPending  = 1 // waiting for admission
	rowRunning  = 2 // admitted; owner runs it
	rowDelayed  = 3 // waiting out a retry backoff until `until`
	rowDone     = 4 // its owner ran it: failed, result and elapsed are set
	rowFinished = 5 // ended; kept a lease long so that waiters see the result
)

// rowOf is e's stored image.
func rowOf(e *entry) row {
	r := row{
		typ: string(e.tid.typ), id: e.tid.id, key: e.key.name, grp: e.grp.name,
		weight: e.weight, payload: e.payload, submitted: e.submitted.UnixNano(),
		runs: e.ctx.attempt, failures: e.attempts, retry: e.retry, owner: e.owner,
	}
	switch e.st {
	case running:
		r.state = rowRunning
	case delayed:
		r.state, r.until = rowDelayed, e.nextAge.UnixNano()
	default:
		r.state = rowPending
	}
	return r
}

// row is the stored image of a job.
type row struct {
	typ, id, key, grp string
	weight            float64
	payload           []byte
	submitted         int64 // Unix nanoseconds
	state             int
	runs, failures    int
	retry             Retry
	until             int64
	owner             string
}

// keyRow is a fairness key's stored charge.
type keyRow struct {
	name   string
	charge float64
	last   int64
}

// estRow is a (type, id)'s learned estimate.
type estRow struct {
	typ, id string
	est     float64
	last    int64
}

// image is what one commit writes: final rows, deletions, keys,
// estimates and V.
type image struct {
	rows []row
	dels []tid
	keys []keyRow
	ests []estRow
	vnow float64
	setV bool
}

const jobCols = `type, id, key, grp, weight, payload, submitted, state, runs, failures,
	retry_max, retry_backoff, retry_max_backoff, until, owner`

const upsertJob = `INSERT INTO fairly_jobs (` + jobCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
	ON CONFLICT (type, id) DO UPDATE SET key = excluded.key, grp = excluded.grp,
	weight = excluded.weight, payload = excluded.payload, submitted = excluded.submitted,
	state = excluded.state, runs = excluded.runs, failures = excluded.failures,
	retry_max = excluded.retry_max, retry_backoff = excluded.retry_backoff,
	retry_max_backoff = excluded.retry_max_backoff, until = excluded.until, owner = excluded.owner`

const upsertKey = `INSERT INTO fairly_keys (name, charge, last) VALUES (?,?,?)
	ON CONFLICT (name) DO UPDATE SET charge = excluded.charge, last = excluded.last`

const upsertEst = `INSERT INTO fairly_estimates (type, id, est, last) VALUES (?,?,?,?)
	ON CONFLICT (type, id) DO UPDATE SET est = excluded.est, last = excluded.last`

const upsertMeta = `INSERT INTO fairly_meta (name, value) VALUES (?, ?)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value`

// write commits im in one transaction.
func (st *Store) write(ctx context.Context, im *image) (err error) {
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			err = fmt.Errorf("%w: %w", ErrStore, err)
		}
	}()
	if err = st.writeTx(ctx, tx, im, false); err != nil {
		return err
	}
	return tx.Commit()
}

// writeTx writes im in tx; on PostgreSQL, with notify, it also notifies
// the channel fairly_jobs.
func (st *Store) writeTx(ctx context.Context, tx *sql.Tx, im *image, notify bool) error {
	if st.dialect == Postgres {
		return st.writeArrays(ctx, tx, im, notify)
	}
	return st.writeRows(ctx, tx, im)
}

// writeRows writes im one statement per row: SQLite runs in the process,
// so a statement costs a function call, not a round trip.
func (st *Store) writeRows(ctx context.Context, tx *sql.Tx, im *image) error {
	if len(im.rows) > 0 {
		stmt, err := tx.PrepareContext(ctx, upsertJob)
		if err != nil {
			return err
		}
		for _, r := range im.rows {
			if _, err := stmt.ExecContext(ctx, r.typ, r.id, r.key, r.grp, r.weight, r.payload,
				r.submitted, r.state, r.runs, r.failures, r.retry.Max, int64(r.retry.Backoff),
				int64(r.retry.MaxBackoff), r.until, r.owner); err != nil {
				return err
			}
		}
	}
	if len(im.dels) > 0 {
		stmt, err := tx.PrepareContext(ctx, `DELETE FROM fairly_jobs WHERE type = ? AND id = ?`)
		if err != nil {
			return err
		}
		for _, d := range im.dels {
			if _, err := stmt.ExecContext(ctx, string(d.typ), d.id); err != nil {
				return err
			}
		}
	}
	for _, k := range im.keys {
		if _, err := tx.ExecContext(ctx, upsertKey, k.name, k.charge, k.last); err != nil {
			return err
		}
	}
	for _, e := range im.ests {
		if _, err := tx.ExecContext(ctx, upsertEst, e.typ, e.id, e.est, e.last); err != nil {
			return err
		}
	}
	if im.setV {
		if _, err := tx.ExecContext(ctx, upsertMeta, "vnow", im.vnow); err != nil {
			return err
		}
	}
	return nil
}

// writeArrays writes im in one statement, the rows passed as arrays, one
// data-modifying WITH clause per table: on PostgreSQL a statement is a
// round trip. With notify, the statement also notifies fairly_jobs.
func (st *Store) writeArrays(ctx context.Context, tx *sql.Tx, im *image, notify bool) error {
	args := columns(im.rows)
	n := len(im.dels)
	dtyp, did := make([]string, n), make([]string, n)
	for i, d := range im.dels {
		dtyp[i], did[i] = string(d.typ), d.id
	}
	n = len(im.keys)
	name, charge, klast := make([]string, n), make([]float64, n), make([]int64, n)
	for i, k := range im.keys {
		name[i], charge[i], klast[i] = k.name, k.charge, k.last
	}
	n = len(im.ests)
	etyp, eid, est, elast := make([]string, n), make([]string, n), make([]float64, n), make([]int64, n)
	for i, e := range im.ests {
		etyp[i], eid[i], est[i], elast[i] = e.typ, e.id, e.est, e.last
	}
	args = append(args, dtyp, did, name, charge, klast, etyp, eid, est, elast, im.vnow, im.setV, notify)
	_, err := tx.ExecContext(ctx, `WITH
		j AS (`+strings.Replace(upsertJob, `VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, unnestJobs, 1)+`),
		d AS (DELETE FROM fairly_jobs WHERE (type, id) IN (SELECT * FROM unnest($16::text[], $17::text[]))),
		k AS (`+strings.Replace(upsertKey, `VALUES (?,?,?)`,
		`SELECT * FROM unnest($18::text[], $19::float8[], $20::int8[])`, 1)+`),
		e AS (`+strings.Replace(upsertEst, `VALUES (?,?,?,?)`,
		`SELECT * FROM unnest($21::text[], $22::text[], $23::float8[], $24::int8[])`, 1)+`),
		m AS (`+strings.Replace(upsertMeta, `VALUES (?, ?)`, `SELECT 'vnow', $25::float8 WHERE $26`, 1)+`)
		SELECT pg_notify('fairly_jobs', '') WHERE $27`, args...)
	return err
}

// unnestJobs is the fifteen arrays of columns as rows of jobCols.
const unnestJobs = `SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[],
	$6::bytea[], $7::int8[], $8::int4[], $9::int4[], $10::int4[], $11::int4[],
	$12::int8[], $13::int8[], $14::int8[], $15::text[])`

// columns gives rows as the fifteen arrays of jobCols.
func columns(rows []row) []any {
	n := len(rows)
	typ, id, key, grp, owner := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	weight, payload := make([]float64, n), make([][]byte, n)
	submitted, backoff, maxBackoff, until := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	state, runs, failures, retryMax := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i, r := range rows {
		typ[i], id[i], key[i], grp[i], owner[i] = r.typ, r.id, r.key, r.grp, r.owner
		weight[i], payload[i] = r.weight, r.payload
		submitted[i], backoff[i], maxBackoff[i], until[i] = r.submitted, int64(r.retry.Backoff), int64(r.retry.MaxBackoff), r.until
		state[i], runs[i], failures[i], retryMax[i] = int32(r.state), int32(r.runs), int32(r.failures), int32(r.retry.Max)
	}
	return []any{typ, id, key, grp, weight, payload, submitted, state, runs, failures, retryMax, backoff, maxBackoff, until, owner}
}

// stored is what a scheduler finds in its store when it starts.
type stored struct {
	rows []row
	keys []keyRow
	ests []estRow
	vnow float64
}

// execer is a database or a transaction, for statements.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// load reads everything the store holds, through q.
func (st *Store) load(ctx context.Context, q querier) (*stored, error) {
	out := &stored{}
	wrap := func(err error) error { return fmt.Errorf("%w: loading: %w", ErrStore, err) }
	rs, err := q.QueryContext(ctx, `SELECT `+jobCols+` FROM fairly_jobs`)
	if err != nil {
		return nil, wrap(err)
	}
	for rs.Next() {
		var r row
		var backoff, maxBackoff int64
		if err := rs.Scan(&r.typ, &r.id, &r.key, &r.grp, &r.weight, &r.payload, &r.submitted,
			&r.state, &r.runs, &r.failures, &r.retry.Max, &backoff, &maxBackoff, &r.until, &r.owner); err != nil {
			rs.Close()
			return nil, wrap(err)
		}
		r.retry.Backoff, r.retry.MaxBackoff = time.Duration(backoff), time.Duration(maxBackoff)
		out.rows = append(out.rows, r)
	}
	if err := rs.Err(); err != nil {
		return nil, wrap(err)
	}
	rs, err = q.QueryContext(ctx, `SELECT name, charge, last FROM fairly_keys`)
	if err != nil {
		return nil, wrap(err)
	}
	for rs.Next() {
		var k keyRow
		if err := rs.Scan(&k.name, &k.charge, &k.last); err != nil {
			rs.Close()
			return nil, wrap(err)
		}
		out.keys = append(out.keys, k)
	}
	if err := rs.Err(); err != nil {
		return nil, wrap(err)
	}
	rs, err = q.QueryContext(ctx, `SELECT type, id, est, last FROM fairly_estimates`)
	if err != nil {
		return nil, wrap(err)
	}
	for rs.Next() {
		var e estRow
		if err := rs.Scan(&e.typ, &e.id, &e.est, &e.last); err != nil {
			rs.Close()
			return nil, wrap(err)
		}
		out.ests = append(out.ests, e)
	}
	if err := rs.Err(); err != nil {
		return nil, wrap(err)
	}
	err = q.QueryRowContext(ctx, st.bind(`SELECT value FROM fairly_meta WHERE name = ?`), "vnow").Scan(&out.vnow)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap(err)
	}
	return out, nil
}

// forget deletes the keys and estimates idle for ttl at now, as the
// scheduler forgets them in memory; a key with a stored job is kept.
func (st *Store) forget(ctx context.Context, q execer, now time.Time, ttl time.Duration) error {
	cut := now.Add(-ttl).UnixNano()
	if _, err := q.ExecContext(ctx, st.bind(`DELETE FROM fairly_keys WHERE last < ?
		AND NOT EXISTS (SELECT 1 FROM fairly_jobs j WHERE j.key = fairly_keys.name)`), cut); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	if _, err := q.ExecContext(ctx, st.bind(`DELETE FROM fairly_estimates WHERE last < ?`), cut); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}
