package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint/clock"
)

// maxGroup bounds how many transactions share one commit, so one commit's
// WAL frames and the wait of its first member stay bounded.
const maxGroup = 256

// errClosed is returned to transactions submitted after Close.
var errClosed = errors.New("sqlite: the driver is closed")

// writer is the single writer with group commit. One goroutine owns the
// write connection. Transactions queue for it; it takes every one waiting
// (up to maxGroup), runs each in its own SAVEPOINT inside one
// BEGIN IMMEDIATE … COMMIT, and only then answers them: concurrent
// transactions share one commit, hence one fsync (synchronous=FULL), and no
// write is acknowledged before the commit that holds it.
//
// A member whose fn fails is rolled back to its savepoint and gets its own
// error; the others commit. A COMMIT that fails fails every member (it is
// retried, every member run again, when the database was busy).
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt // prepared once on conn, used only by the loop
	clock clock.Clock

	mu     sync.Mutex
	queue  []*writeReq
	closed bool
	wake   chan struct{} // one pending signal that the queue is not empty
	done   chan struct{} // closed when the loop has exited

	// commits and busyRetries count committed groups and attempts retried
	// because the database was busy (for tests and measurements).
	commits, busyRetries atomic.Int64
}

// writeReq is one transaction waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(*txn) error
	err  error
	done chan struct{}
	// panicked holds what fn panicked with, re-raised in the caller's
	// goroutine: a panic in one transaction must not take down the writer.
	panicked any
}

// errPanicked stands for a member's panic until its caller re-raises it.
var errPanicked = errors.New("sqlite: the transaction panicked")

// run calls r.fn, turning a panic into errPanicked.
func (r *writeReq) run(t *txn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked, err = v, errPanicked
		}
	}()
	return r.fn(t)
}

func newWriter(conn *sql.Conn, clk clock.Clock) *writer {
	w := &writer{conn: conn, stmts: map[string]*sql.Stmt{}, clock: clk,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

// do runs fn in the next group and returns its outcome once that group's
// commit has decided it.
func (w *writer) do(ctx context.Context, fn func(*txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errClosed
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	// Once queued, the outcome is the commit's: wait for it even if ctx
	// ends, so a caller never hears "cancelled" for a write that committed.
	<-r.done
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

// queued returns how many transactions wait for the writer (for tests).
func (w *writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// close stops the loop after the transactions already queued and waits
// for it.
func (w *writer) close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if already {
		<-w.done
		return nil
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
	var errs []error
	for _, st := range w.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, w.conn.Close())...)
}

func (w *writer) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		n := min(len(w.queue), maxGroup)
		group := append([]*writeReq(nil), w.queue[:n]...)
		w.queue = append(w.queue[:0], w.queue[n:]...)
		closed := w.closed
		more := len(w.queue) > 0
		w.mu.Unlock()
		if len(group) > 0 {
			w.commit(group)
			for _, r := range group {
				close(r.done)
			}
		}
		if more {
			continue
		}
		if closed && len(group) == 0 {
			return
		}
		if !closed {
			<-w.wake
		}
	}
}

// commit runs group in one transaction, retrying the whole group while the
// database is busy (another process holds the write lock past
// busy_timeout) and some member still wants an answer.
func (w *writer) commit(group []*writeReq) {
	wait := time.Millisecond
	for {
		err := w.attempt(group)
		if err == nil {
			return
		}
		if isBusy(err) && alive(group) {
			w.busyRetries.Add(1)
			time.Sleep(wait) // the writer's own backoff; no caller is acknowledged meanwhile
			wait = min(2*wait, 100*time.Millisecond)
			continue
		}
		if isBusy(err) {
			err = fmt.Errorf("sqlite: database busy: %w", err)
		}
		for _, r := range group {
			if r.err == nil || isBusy(r.err) {
				r.err = err
			}
		}
		return
	}
}

// alive reports whether some member's context has not ended.
func alive(group []*writeReq) bool {
	for _, r := range group {
		if r.ctx.Err() == nil {
			return true
		}
	}
	return false
}

// attempt runs every member of group in one transaction and commits it. It
// returns an error when the transaction as a whole failed (nothing of it is
// written); members' own failures are in their err.
func (w *writer) attempt(group []*writeReq) error {
	ctx := context.Background()
	if err := w.execSQL(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if len(group) == 1 {
		// Alone in its group, a transaction needs no savepoint: its failure
		// rolls back the whole transaction.
		r := group[0]
		r.panicked = nil
		if r.err = r.ctx.Err(); r.err == nil {
			r.err = r.run(w.txn())
		}
		if r.err != nil {
			w.rollback(ctx)
			return nil
		}
	} else {
		for _, r := range group {
			if err := w.member(ctx, r); err != nil {
				w.rollback(ctx)
				return err
			}
		}
	}
	if err := w.execSQL(ctx, "COMMIT"); err != nil {
		w.rollback(ctx)
		return err
	}
	w.commits.Add(1)
	return nil
}

// txn returns a transaction on the writer's connection.
func (w *writer) txn() *txn {
	return &txn{q: detached{w.conn}, prep: w.prepare, clock: w.clock, detach: true}
}

// member runs one transaction of a group in a savepoint. Its own failure
// rolls back to the savepoint and lands in r.err; the error returned means
// the enclosing transaction is lost.
func (w *writer) member(ctx context.Context, r *writeReq) error {
	r.err, r.panicked = nil, nil
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return nil
	}
	if err := w.execSQL(ctx, "SAVEPOINT member"); err != nil {
		return err
	}
	r.err = r.run(w.txn())
	if r.err != nil {
		if err := w.execSQL(ctx, "ROLLBACK TO member"); err != nil {
			return fmt.Errorf("sqlite: roll back a failed transaction: %w (it failed with: %v)", err, r.err)
		}
	}
	return w.execSQL(ctx, "RELEASE member")
}

// execSQL runs one of the writer's own statements, prepared once.
func (w *writer) execSQL(ctx context.Context, query string) error {
	st, err := w.prepare(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx)
	return err
}

// rollback ends a failed transaction; an error means none was open.
func (w *writer) rollback(ctx context.Context) {
	_ = w.execSQL(ctx, "ROLLBACK")
}

// prepare returns query prepared on the writer's connection, preparing it
// on first use. Only the loop calls it.
func (w *writer) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare: %w", err)
	}
	w.stmts[query] = st
	return st, nil
}

// detached runs statements on the writer's connection without the caller's
// cancellation: an interrupted write inside an explicit transaction can make
// SQLite roll back the whole transaction, every member of the group with it.
// A member sees its context end between statements instead.
type detached struct{ c *sql.Conn }

func (d detached) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.c.ExecContext(context.WithoutCancel(ctx), q, args...)
}

func (d detached) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.c.QueryContext(context.WithoutCancel(ctx), q, args...)
}

func (d detached) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.c.QueryRowContext(context.WithoutCancel(ctx), q, args...)
}
