// Package pgstore opens a durable jobs.Store on PostgreSQL through pgx.
// Several processes may share one database: see docs/jobs.md for how they
// keep one fair order.
package pgstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fairlyprompt/fairly/jobs"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the driver "pgx"
)

// Open connects to the PostgreSQL database that dsn names (a URL such as
// postgres://user:pass@host/db or key=value pairs) and makes it a
// jobs.Store, creating its tables if needed. Close the store after the
// scheduler that uses it.
func Open(ctx context.Context, dsn string, opts jobs.StoreOptions) (*jobs.Store, error) {
	if opts.Listen == nil {
		opts.Listen = func(ctx context.Context, wake func()) error { return listen(ctx, dsn, wake) }
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	st, err := jobs.NewStore(ctx, db, jobs.Postgres, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}

// listen wakes the scheduler on every notification of the channel
// fairly_jobs, on a connection of its own, until ctx ends.
func listen(ctx context.Context, dsn string, wake func()) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN fairly_jobs"); err != nil {
		return err
	}
	wake() // whatever happened before LISTEN
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}
