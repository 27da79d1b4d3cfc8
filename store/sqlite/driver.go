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
	// NoticePoll is how often Listen reads the notices other processes
	// (and this one) commit: the most a cancel from another process waits
	// to reach its handler. Defaults to DefaultNoticePoll (25 ms).
	NoticePoll time.Duration
}

// Driver is a [store.Driver] on one SQLite file.
type Driver struct {
	writeDB *sql.DB // one connection, owned by w
	w       *writer
	read    *sql.DB
	rstmts  *stmtCache
	clock   clock.Clock
	// noticePoll is Options.NoticePoll.
	noticePoll time.Duration
	// noticeFrom is the last notice id at Open: Listen delivers those after.
	noticeFrom int64
	// applied names the migrations Open applied.
	applied []string
}

var _ store.Driver = (*Driver)(nil)

// pragmas are set on every connection. synchronous=FULL makes every commit
// durable before it is acknowledged. The WAL checkpoints itself every 1,000
// pages (SQLite's wal_autocheckpoint default, kept); a long reader stops
// checkpoints from resetting it and the file grows meanwhile, so
// journal_size_limit truncates it back to 64 MiB at the next reset rather
// than leaving it at its peak size.
const pragmas = "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
	"&_pragma=wal_autocheckpoint(1000)&_pragma=journal_size_limit(67108864)"

func fileURI(path string) string { return "file:" + (&url.URL{Path: path}).EscapedPath() }

// Open opens (creating if needed) the database file at path and applies the
// embedded migrations; with opts.NoMigrate it only opens a database that is
// already up to date.
func Open(ctx context.Context, path string, opts Options) (*Driver, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: a database path is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.NoticePoll <= 0 {
		opts.NoticePoll = DefaultNoticePoll
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.NoMigrate {
		if err := checkSchema(ctx, path); err != nil {
			return nil, err
		}
	}
	base := fileURI(path) + "?" + pragmas
	wdb, err := sql.Open("sqlite", base)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	applied, err := migrate(ctx, conn)
	if err != nil {
		conn.Close()
		wdb.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	d := &Driver{writeDB: wdb, w: newWriter(conn, opts.Clock), read: r, clock: opts.Clock, noticePoll: opts.NoticePoll, applied: applied}
	if d.rstmts, err = newStmtCache(ctx, r, readQueries); err != nil {
		d.Close()
		return nil, err
	}
	if d.noticeFrom, err = d.noticesLast(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
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

// Close finishes the transactions already submitted and closes both
// connection pools.
func (d *Driver) Close() error {
	return errors.Join(d.w.close(), d.rstmts.close(), d.writeDB.Close(), d.read.Close())
}

// InTx runs fn in a transaction of the single writer, which commits it in a
// group with the other transactions waiting at the time (see writer), and
// returns once the commit that holds it is durable.
func (d *Driver) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return d.w.do(ctx, func(t *txn) error { return fn(t) })
}

// Read runs fn in a read transaction on the reader pool.
func (d *Driver) Read(ctx context.Context, fn func(store.Tx) error) error {
	return retryBusy(ctx, func() error {
		tx, err := d.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		t := &txn{q: tx, clock: d.clock, readOnly: true, prep: func(ctx context.Context, q string) (*sql.Stmt, error) {
			st, err := d.rstmts.get(q)
			if err != nil {
				return nil, err
			}
			return tx.StmtContext(ctx, st), nil
		}}
		if err := fn(t); err != nil {
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
