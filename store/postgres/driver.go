package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stint-dev/stint/store"
)

// Driver is the PostgreSQL [store.Driver]: a pgx connection pool whose
// connections all work in one schema. Build a Store on it with [store.New],
// or use [OpenStore].
type Driver struct {
	pool *pgxpool.Pool
	opts Options
	log  *slog.Logger
	// lw is the claims' low-water marks; the probe that corrects them runs
	// from the first claim until Close (see lowwater_probe.go).
	lw        *lowWater
	an        analyzer // used by the probe goroutine alone (analyze.go)
	probeOnce sync.Once
	probeStop context.CancelFunc
	probeCtx  context.Context
	probeDone chan struct{}

	closeOnce sync.Once
}

var (
	_ store.Driver   = (*Driver)(nil)
	_ store.Listener = (*Driver)(nil)
)

// Open connects to the database at url (a PostgreSQL URL or key=value
// connection string), creates the schema if it is missing and applies the
// migrations it lacks (with opts.NoMigrate it only checks that the schema is
// there and up to date), and creates the event partitions due soon.
func Open(ctx context.Context, url string, opts Options) (*Driver, error) {
	d, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if d.opts.NoMigrate {
		err = d.checkSchema(ctx)
	} else {
		err = d.Migrate(ctx)
	}
	if err == nil {
		err = d.EnsurePartitions(ctx, time.Time{})
	}
	if err != nil {
		d.pool.Close()
		return nil, err
	}
	return d, nil
}

// connect opens the driver's pool without looking at the schema.
func connect(ctx context.Context, url string, opts Options) (*Driver, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.tracer != nil {
		cfg.ConnConfig.Tracer = opts.tracer
	}
	params := cfg.ConnConfig.RuntimeParams
	// Every statement resolves its tables in the schema; pg_catalog is
	// always searched first, so built-in functions stay reachable.
	params["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	if params["application_name"] == "" {
		// Names the pool's sessions in pg_stat_activity.
		params["application_name"] = ApplicationName(opts.Schema)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d := &Driver{pool: pool, opts: opts, log: opts.Logger, lw: newLowWater(), probeDone: make(chan struct{})}
	d.probeCtx, d.probeStop = context.WithCancel(context.Background())
	return d, nil
}

// ApplicationName is the application_name the driver gives its sessions
// (unless the URL sets one), so pg_stat_activity tells them apart.
func ApplicationName(schema string) string { return "stint/" + schema }

// OpenStore opens a Driver and builds a Store on it.
func OpenStore(ctx context.Context, url string, opts Options) (store.Store, error) {
	d, err := Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return store.New(d, store.Options{}), nil
}

// Pool returns the driver's connection pool, for callers that run their own
// transactions and enqueue inside them (see [Driver.EnqueueTx]).
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Schema returns the schema the driver works in.
func (d *Driver) Schema() string { return d.opts.Schema }

// Close stops the low-water probe and closes the pool. It is safe to call
// more than once.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.probeStop()
		d.probeOnce.Do(func() { close(d.probeDone) }) // never started
		<-d.probeDone
		d.pool.Close()
	})
	return nil
}

// InTx runs fn in a read-committed transaction. Conflicts with other
// transactions (serialization failures, deadlocks, a lost enqueue race) and
// lost connections roll it back and run fn again, up to about 20 s; errors
// fn returns itself, such as lifecycle rejections, end it at once.
func (d *Driver) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, pgx.TxOptions{}, true, fn)
}

// Read runs fn in a read-only repeatable-read transaction, so every
// statement of fn sees the same snapshot.
func (d *Driver) Read(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, false, fn)
}

// Retry policy: exponential backoff with full jitter from retryBase up to
// retryMax, at most maxTries runs in all: about 20 s of trying, enough to
// ride out a PostgreSQL restart.
const (
	maxTries  = 30
	retryBase = 2 * time.Millisecond
	retryMax  = time.Second
)

func (d *Driver) run(ctx context.Context, opts pgx.TxOptions, write bool, fn func(store.Tx) error) error {
	for try := 1; ; try++ {
		err := d.once(ctx, opts, write, fn)
		if err == nil {
			return nil
		}
		if !retryable(ctx, err) {
			var ce *commitError
			if errors.As(err, &ce) {
				return fmt.Errorf("%w: %w", ErrCommitUncertain, ce.err)
			}
			return err
		}
		if try == maxTries {
			return fmt.Errorf("postgres: gave up after %d tries: %w", try, err)
		}
		d.log.DebugContext(ctx, "postgres: retrying transaction", "try", try, "err", err)
		wait := min(retryBase<<(try-1), retryMax)
		t := time.NewTimer(rand.N(wait) + 1)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("postgres: %w (while retrying after: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// once runs fn in one transaction. When COMMIT fails in a way that leaves
// its outcome open (the connection broke while the server was committing),
// once asks the server what became of the transaction: success if it
// committed, a retryable error if it rolled back, a *commitError if no
// answer comes.
func (d *Driver) once(ctx context.Context, opts pgx.TxOptions, write bool, fn func(store.Tx) error) (err error) {
	pc, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The pool closes a connection released inside a transaction.
	released := false
	release := func() {
		if !released {
			released = true
			pc.Release()
		}
	}
	defer release()
	t := newTx(pc.Conn(), beginSQL(opts), d.opts, write)
	t.lw = d.lw
	defer func() {
		// After COMMIT or ROLLBACK: what the transaction wrote is visible
		// to the claims that begin from here on.
		claimed := len(t.flights) > 0
		t.finish(err == nil)
		if claimed {
			d.startProbe()
		}
	}()
	if err := fn(t); err != nil {
		t.rollback(ctx)
		return err
	}
	err = t.commit(ctx)
	var cs *commitStageError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &cs) && !isConnLoss(err):
		// A statement before COMMIT failed (the server refused it, or a
		// compare-and-swap missed), so the server skipped the COMMIT:
		// nothing was applied.
		t.rollback(ctx)
		return err
	case rolledBack(err):
		return &abortedError{err}
	case t.xid == 0:
		return err // the transaction wrote nothing: a lost connection makes it retryable
	}
	// Give the broken connection back before asking on another: with every
	// connection of the pool in this state, holding it would deadlock.
	release()
	switch d.xactStatus(ctx, t.xid) {
	case "committed":
		d.log.InfoContext(ctx, "postgres: the connection failed during COMMIT, but the transaction committed", "xid", t.xid, "err", err)
		return nil
	case "aborted":
		return &abortedError{err}
	}
	return &commitError{err}
}

// beginSQL is the BEGIN statement of a transaction with opts.
func beginSQL(opts pgx.TxOptions) string {
	s := "begin"
	if opts.IsoLevel != "" {
		s += " isolation level " + string(opts.IsoLevel)
	}
	if opts.AccessMode != "" {
		s += " " + string(opts.AccessMode)
	}
	return s
}

// xactStatus asks PostgreSQL whether the transaction xid committed, trying
// on other connections while the server is unreachable or the transaction
// is still being rolled back by its dying backend. It returns "committed",
// "aborted", or "" when it could not learn which.
func (d *Driver) xactStatus(ctx context.Context, xid int64) string {
	for try := 1; try <= maxTries; try++ {
		var status *string
		err := d.pool.QueryRow(ctx, qXactStatus, xid).Scan(&status)
		switch {
		case err == nil && status != nil && (*status == "committed" || *status == "aborted"):
			return *status
		case err != nil && !isConnLoss(err):
			d.log.WarnContext(ctx, "postgres: could not learn whether a transaction committed", "xid", xid, "err", err)
			return ""
		}
		t := time.NewTimer(rand.N(min(retryBase<<(try-1), retryMax)) + 1)
		select {
		case <-ctx.Done():
			t.Stop()
			return ""
		case <-t.C:
		}
	}
	return ""
}
