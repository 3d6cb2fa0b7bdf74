// Package pgstore opens a durable jobs.Store on PostgreSQL through pgx.
// Several processes may share one database: see docs/jobs.md for how they
// keep one fair order.
package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/fairlyprompt/fairly/jobs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also the driver "pgx"
)

// Open connects to the PostgreSQL database that dsn names (a URL such as
// postgres://user:pass@host/db or key=value pairs) and makes it a
// jobs.Store, creating its tables if needed. Close the store after the
// scheduler that uses it.
func Open(ctx context.Context, dsn string, opts jobs.StoreOptions) (*jobs.Store, error) {
	if opts.Listen == nil {
		opts.Listen = func(ctx context.Context, node string, wake func()) error { return listen(ctx, dsn, node, wake) }
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	if opts.Async == nil {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("%w: %w", jobs.ErrStore, err)
		}
		cfg.RuntimeParams["synchronous_commit"] = "off"
		opts.Async = stdlib.OpenDB(*cfg)
	}
	st, err := jobs.NewStore(ctx, db, jobs.Postgres, opts)
	if err != nil {
		db.Close()
		opts.Async.Close()
		return nil, err
	}
	return st, nil
}

// listen wakes the scheduler on every notification of the channel
// fairly_jobs, on a connection of its own named after the node, until ctx
// ends: while the connection lives, the other processes know the node is
// alive.
func listen(ctx context.Context, dsn, node string, wake func()) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "fairly-" + node
	conn, err := pgx.ConnectConfig(ctx, cfg)
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

// FreshSchema drops the schema named schema with everything in it,
// creates it empty, and returns a DSN like dsn whose tables live there
// (search_path), for tests and tools that want a store of their own.
func FreshSchema(ctx context.Context, dsn, schema string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	defer conn.Close(context.Background())
	name := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE`); err != nil {
		return "", fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+name); err != nil {
		return "", fmt.Errorf("%w: %w", jobs.ErrStore, err)
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// key=value form
		return dsn + " search_path=" + schema, nil
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
