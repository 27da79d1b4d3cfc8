package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// Options configure a SQLite driver.
type Options struct {
	// Clock is the store's clock. Defaults to the system clock.
	Clock clock.Clock
	// Readers is the size of the read pool. Defaults to 4.
	Readers int
	// NoMigrate opens an existing database without creating or migrating
	// it: Open fails with store.ErrSchemaMissing or store.ErrSchemaOutdated
	// (wrapped, naming `stint migrate`) and changes nothing. Commands that
	// only read or act on jobs set it. Defaults to false.
	NoMigrate bool
}

// Driver is a [store.Driver] on one SQLite file.
type Driver struct {
	write  *sql.DB // one connection: the single writer
	read   *sql.DB
	wstmts *stmtCache
	rstmts *stmtCache
	clock  clock.Clock
	// applied names the migrations Open applied.
	applied []string
}

var _ store.Driver = (*Driver)(nil)

// Open opens (creating if needed) the database file at path and applies the
// embedded migrations.
func Open(ctx context.Context, path string, opts Options) (*Driver, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: a database path is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	pragmas := "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	d := &Driver{write: w, read: r, clock: opts.Clock}
	if err := w.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if d.applied, err = d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if d.wstmts, err = newStmtCache(ctx, w, writeQueries); err != nil {
		d.Close()
		return nil, err
	}
	if d.rstmts, err = newStmtCache(ctx, r, readQueries); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Applied returns the names of the migrations Open applied, in order:
// none when the file was already up to date.
func (d *Driver) Applied() []string { return append([]string(nil), d.applied...) }

// OpenStore opens the database at path and returns a Store on it.
func OpenStore(ctx context.Context, path string, opts Options) (store.Store, error) {
	d, err := Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return store.New(d, store.Options{}), nil
}

// Close closes both connection pools.
func (d *Driver) Close() error {
	return errors.Join(d.wstmts.close(), d.rstmts.close(), d.write.Close(), d.read.Close())
}

// InTx runs fn in a BEGIN IMMEDIATE transaction on the writer connection,
// retrying when SQLite reports the database busy or locked.
func (d *Driver) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return d.InTxSQL(ctx, func(tx *sql.Tx) error { return fn(&txn{tx: tx, stmts: d.wstmts, clock: d.clock}) })
}

// Read runs fn in a read transaction on the reader pool.
func (d *Driver) Read(ctx context.Context, fn func(store.Tx) error) error {
	return retryBusy(ctx, func() error {
		tx, err := d.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(&txn{tx: tx, stmts: d.rstmts, clock: d.clock, readOnly: true}); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// InTxSQL runs fn in a write transaction with busy retries.
func (d *Driver) InTxSQL(ctx context.Context, fn func(*sql.Tx) error) error {
	return retryBusy(ctx, func() error {
		tx, err := d.write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// retryBusy runs f again while it fails with SQLITE_BUSY or SQLITE_LOCKED
// (another process holds the write lock past busy_timeout), until ctx ends.
func retryBusy(ctx context.Context, f func() error) error {
	wait := time.Millisecond
	for {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sqlite: database busy: %w", ctx.Err())
		case <-t.C:
		}
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}
