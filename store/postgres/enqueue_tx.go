package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/store"
)

// maxRaceTries bounds the reruns of an enqueue inside a caller's
// transaction that lost a race to a concurrent one; see txDriver.InTx.
const maxRaceTries = 3

// EnqueueTx enqueues jobs inside the caller's own transaction tx: they exist
// only if tx commits, and their notifications go out only then. opts names
// the schema (and whether to notify); the caller's connection need not have
// its search_path set, and keeps it. The work runs in a savepoint, so a
// rejected enqueue leaves tx usable.
func EnqueueTx(ctx context.Context, tx pgx.Tx, p *store.JobEnqueueParams, opts Options) ([]store.EnqueueResult, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return store.New(&txDriver{tx: tx, opts: opts}, store.Options{}).JobEnqueue(ctx, p)
}

// EnqueueTx enqueues jobs inside the caller's transaction tx, which may come
// from any pool on the same database; see the package function [EnqueueTx].
func (d *Driver) EnqueueTx(ctx context.Context, tx pgx.Tx, p *store.JobEnqueueParams) ([]store.EnqueueResult, error) {
	return EnqueueTx(ctx, tx, p, d.opts)
}

// WithTx returns a store.Driver whose transactions are savepoints of the
// caller's transaction tx, in the driver's schema, so that any operation of
// a store built on it with store.New commits or rolls back with tx. Such a
// store does not listen for notifications; closing it leaves tx open.
func (d *Driver) WithTx(tx pgx.Tx) store.Driver { return &txDriver{tx: tx, opts: d.opts} }

// txDriver runs the store's transactions as savepoints of a caller's transaction.
type txDriver struct {
	tx   pgx.Tx
	opts Options
}

// Sequential tells the store that txDriver's transactions share one
// connection: it never reads through it from another goroutine.
func (d *txDriver) Sequential() {}

// InTx runs fn in a savepoint. Only a lost enqueue race is run again: the
// savepoint's rollback leaves tx usable, and a read-committed transaction
// then sees the winner's job. Any other error is the caller's to handle,
// since it owns the transaction.
func (d *txDriver) InTx(ctx context.Context, fn func(store.Tx) error) error {
	for try := 1; ; try++ {
		err := d.savepoint(ctx, true, fn)
		var pe *pgconn.PgError
		if err == nil || try == maxRaceTries || !errors.As(err, &pe) || !lostEnqueueRace(pe) {
			return err
		}
	}
}

// Read runs fn in a savepoint of tx, without locking rows.
func (d *txDriver) Read(ctx context.Context, fn func(store.Tx) error) error {
	return d.savepoint(ctx, false, fn)
}

// Close does nothing: the caller owns the transaction.
func (d *txDriver) Close() error { return nil }

// savepoint runs fn in a savepoint with search_path set to the schema, and
// gives tx its own search_path back afterwards.
func (d *txDriver) savepoint(ctx context.Context, write bool, fn func(store.Tx) error) error {
	var old string
	if err := d.tx.QueryRow(ctx, qGetSearchPath).Scan(&old); err != nil {
		return fmt.Errorf("postgres: read the caller's search_path: %w", err)
	}
	sp, err := d.tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: savepoint in the caller's transaction: %w", err)
	}
	// A rollback to the savepoint undoes this setting too.
	if _, err := sp.Exec(ctx, qSetSearchPath, pgx.Identifier{d.opts.Schema}.Sanitize()); err != nil {
		_ = sp.Rollback(ctx)
		return fmt.Errorf("postgres: set search_path: %w", err)
	}
	t := newTx(sp.Conn(), "", d.opts, write)
	err = fn(t)
	if err == nil {
		t.flushNotices()
		err = t.send(ctx) // the writes (and notifications) still pending
	}
	if err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: release savepoint: %w", err)
	}
	if _, err := d.tx.Exec(ctx, qSetSearchPath, old); err != nil {
		return fmt.Errorf("postgres: restore the caller's search_path: %w", err)
	}
	return nil
}
