// Package sqlitestore opens a durable jobs.Store in an SQLite file, with
// the pure-Go driver modernc.org/sqlite: nothing to install, no cgo.
//
// The file is in WAL mode with synchronous=NORMAL: a commit is in the
// operating system's hands when it returns, so it survives the death of
// the process (kill -9), not necessarily a power cut; Options.Sync makes
// every commit wait for the disk. One process at a time uses a file.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/fairlyprompt/fairly/jobs"
	_ "modernc.org/sqlite" // the driver "sqlite"
)

// Options tunes the store.
type Options struct {
	// Sync makes each commit wait until the disk has it (synchronous=FULL),
	// so that a power cut loses nothing either; slower.
	Sync bool
}

// Open opens (creating if needed) the SQLite database at path as a
// jobs.Store. Close the store after the scheduler that uses it.
func Open(path string, opts Options) (*jobs.Store, error) {
	sync := "NORMAL"
	if opts.Sync {
		sync = "FULL"
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "busy_timeout(5000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	// One connection: SQLite has one writer, and the scheduler's writer
	// is one goroutine.
	db.SetMaxOpenConns(1)
	st, err := jobs.NewStore(context.Background(), db, jobs.SQLite, jobs.StoreOptions{})
	if err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}
