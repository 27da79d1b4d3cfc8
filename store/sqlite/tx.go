package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// querier is what a transaction runs ad-hoc statements on: the writer's
// connection (inside its BEGIN … COMMIT) or a reader's *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txn is one transaction: a store.Tx on the writer's connection or on a
// read transaction.
type txn struct {
	q querier
	// prep returns query prepared on this transaction's connection, from a
	// cache of statements prepared once.
	prep     func(ctx context.Context, query string) (*sql.Stmt, error)
	clock    clock.Clock
	readOnly bool
	// detach runs statements without the caller's cancellation (the
	// writer's transactions; see detached).
	detach bool
	now    time.Time
}

// stmtCtx is the context statements of this transaction run under.
func (t *txn) stmtCtx(ctx context.Context) context.Context {
	if t.detach {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

var _ store.Tx = (*txn)(nil)

// Now is the driver's clock, read once per transaction.
func (t *txn) Now(context.Context) (time.Time, error) {
	if t.now.IsZero() {
		t.now = t.clock.Now()
	}
	return t.now, nil
}

func (t *txn) JobInsert(ctx context.Context, jobs []lifecycle.Job) error {
	const cols = 65 // jobImmutable and jobMutable
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), insertChunk)]
		jobs = jobs[len(chunk):]
		args := make([]any, 0, cols*len(chunk))
		for i := range chunk {
			j := &chunk[i]
			imm, err := immutableArgs(j)
			if err != nil {
				return fmt.Errorf("sqlite: insert job %s: %w", j.ID, err)
			}
			args = append(append(args, imm...), mutableArgs(j)...)
		}
		st, err := t.prep(ctx, insertQuery(qJobInsertHead, cols, len(chunk)))
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(t.stmtCtx(ctx), args...); err != nil {
			return fmt.Errorf("sqlite: insert jobs %s (and %d more): %w", chunk[0].ID, len(chunk)-1, err)
		}
	}
	return nil
}

func (t *txn) JobUpdate(ctx context.Context, updates []store.JobUpdate) error {
	// One set of columns for the whole batch, the union of the updates'
	// changes (store.Updates), up to insertChunk rows per statement: one
	// statement opens the table's and the indexes' cursors once for all its
	// rows, and the statements are the same few from batch to batch
	// (prepared once; a set per update made many, each parsed anew).
	mask := store.Updates(updates)
	rows := make([]rowUpdate, len(updates))
	for i := range updates {
		rows[i] = rowUpdate{u: &updates[i], args: maskedArgs(&updates[i].Job, mask)}
	}
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), insertChunk)]
		rows = rows[len(chunk):]
		if err := t.updateRows(ctx, mask, chunk); err != nil {
			return err
		}
	}
	return nil
}

// rowUpdate is one job's update: the values of the changed columns.
type rowUpdate struct {
	u    *store.JobUpdate
	args []any
}

// updateRows writes rows that change the columns in mask, in one statement.
func (t *txn) updateRows(ctx context.Context, mask uint64, rows []rowUpdate) error {
	var query string
	var args []any
	if len(rows) == 1 {
		query = updateQuery(mask)
		args = append(rows[0].args, rows[0].u.Job.ID, rows[0].u.PrevRev)
	} else {
		query = updateManyQuery(mask, len(rows))
		for _, r := range rows {
			args = append(append(args, r.u.Job.ID, r.u.PrevRev), r.args...)
		}
	}
	st, err := t.prep(ctx, query)
	if err != nil {
		return err
	}
	res, err := st.ExecContext(t.stmtCtx(ctx), args...)
	if err != nil {
		return fmt.Errorf("sqlite: update job %s: %w", rows[0].u.Job.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(rows)) {
		return t.conflict(ctx, rows)
	}
	return nil
}

// conflict names a job of rows whose row was not at its expected rev (the
// others now hold their new rev); the caller rolls the transaction back.
func (t *txn) conflict(ctx context.Context, rows []rowUpdate) error {
	bad := rows[0].u
	for _, r := range rows {
		var rev int64
		err := t.q.QueryRowContext(ctx, `SELECT rev FROM jobs WHERE id = ?`, r.u.Job.ID).Scan(&rev)
		if err != nil || rev != r.u.Job.Rev {
			bad = r.u
			break
		}
	}
	return &lifecycle.Error{Kind: store.ErrRevisionConflict, JobID: bad.Job.ID,
		Msg: fmt.Sprintf("the row is no longer at rev %d; read it again", bad.PrevRev)}
}

func (t *txn) JobGet(ctx context.Context, ids []string) ([]lifecycle.Job, error) {
	if len(ids) == 1 {
		// The common case (one job's transition) skips json_each.
		return t.jobs(ctx, qJobGetOne, ids[0])
	}
	jobs, err := t.jobs(ctx, qJobGet, jsonList(ids))
	if err != nil || len(jobs) < 2 {
		return jobs, err
	}
	byID := make(map[string]lifecycle.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	ordered := make([]lifecycle.Job, 0, len(jobs))
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			ordered = append(ordered, j)
			delete(byID, id)
		}
	}
	return ordered, nil
}

func (t *txn) JobLiveByDedupe(ctx context.Context, tenant, key string) (lifecycle.Job, bool, error) {
	jobs, err := t.jobs(ctx, qJobByDedupe, tenant, key)
	if err != nil || len(jobs) == 0 {
		return lifecycle.Job{}, false, err
	}
	return jobs[0], true, nil
}

func (t *txn) JobClaimable(ctx context.Context, q store.ClaimQuery) ([]lifecycle.Job, error) {
	kinds, topics := jsonList(q.Kinds), jsonList(q.Topics)
	var out []lifecycle.Job
	for _, queue := range q.Queues {
		jobs, err := t.jobs(ctx, qJobClaimable, queue, kinds, q.Limit, topics)
		if err != nil {
			return nil, err
		}
		out = append(out, jobs...)
	}
	if len(q.Queues) > 1 {
		slices.SortFunc(out, func(a, b lifecycle.Job) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		out = out[:min(len(out), q.Limit)]
	}
	return out, nil
}

func (t *txn) JobDue(ctx context.Context, q store.DueQuery) ([]lifecycle.Job, error) {
	var query string
	switch q.Kind {
	case store.DuePromote:
		query = qDuePromote
	case store.DueLeaseExpired:
		query = qDueLease
	case store.DueStalled:
		query = qDueStalled
	case store.DueCancelDeadline:
		query = qDueCancel
	case store.DueTimeout:
		query = qDueTimeout
	case store.DueDeadline:
		query = qDueDeadline
	default:
		return nil, fmt.Errorf("sqlite: unknown due query %q", q.Kind)
	}
	return t.jobs(ctx, query, micros(q.Now), q.Limit)
}

func (t *txn) JobList(ctx context.Context, p store.JobListParams) ([]lifecycle.Job, error) {
	states := make([]string, len(p.States))
	for i, s := range p.States {
		states[i] = string(s)
	}
	return t.jobs(ctx, qJobList, jsonList(states), p.Queue, p.Kind, p.AfterID, p.Limit)
}

// jobs runs a query whose columns are jobColumns.
func (t *txn) jobs(ctx context.Context, query string, args ...any) ([]lifecycle.Job, error) {
	return collect(ctx, t, query, newJobScanner().scan, args...)
}

func (t *txn) EventInsert(ctx context.Context, events []lifecycle.Event) error {
	const cols = 17 // eventColumns
	for len(events) > 0 {
		chunk := events[:min(len(events), insertChunk)]
		events = events[len(chunk):]
		args := make([]any, 0, cols*len(chunk))
		for i := range chunk {
			args = append(args, eventArgs(&chunk[i])...)
		}
		st, err := t.prep(ctx, insertQuery(qEventInsertHead, cols, len(chunk)))
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(t.stmtCtx(ctx), args...); err != nil {
			return fmt.Errorf("sqlite: insert events of job %s rev %d (and %d more): %w", chunk[0].JobID, chunk[0].Rev, len(chunk)-1, err)
		}
	}
	return nil
}

func (t *txn) EventByRequest(ctx context.Context, jobID, requestID string) (lifecycle.Event, bool, error) {
	evs, err := collect(ctx, t, qEventByRequest, newEventScanner().scan, requestID, jobID)
	if err != nil || len(evs) == 0 {
		return lifecycle.Event{}, false, err
	}
	return evs[0], true, nil
}

func (t *txn) EventList(ctx context.Context, jobIDs []string) ([]lifecycle.Event, error) {
	return collect(ctx, t, qEventList, newEventScanner().scan, jsonList(jobIDs))
}

func (t *txn) EventJobsByRequest(ctx context.Context, requestID string, typ lifecycle.EventType) ([]string, error) {
	if requestID == "" {
		return nil, nil
	}
	return collect(ctx, t, qEventJobsByRequest, func(rows *sql.Rows) (string, error) {
		var id string
		return id, rows.Scan(&id)
	}, requestID, string(typ))
}

// collect runs query as a prepared statement and reads each row with scan,
// as pgx.CollectRows does for the PostgreSQL driver.
func collect[T any](ctx context.Context, t *txn, query string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	st, err := t.prep(ctx, query)
	if err != nil {
		return nil, err
	}
	return rowsOf(scan)(st.QueryContext(t.stmtCtx(ctx), args...))
}

// Notify writes the notice into the notices table in this transaction, one
// row per queue and per job, for the listeners of other processes on the
// same file (see listen.go); it lands only if the transaction commits. This
// process's own subscribers are woken by the store after commit, and hear
// the rows back through Listen as well: harmless, since claiming and
// looking at a lease are idempotent.
func (t *txn) Notify(ctx context.Context, n store.Notice) error {
	if n.Empty() {
		return nil
	}
	now, _ := t.Now(ctx)
	st, err := t.prep(ctx, qNoticeInsert)
	if err != nil {
		return err
	}
	for _, kn := range [...]struct {
		kind  string
		names []string
	}{{noticeQueue, n.Queues}, {noticeJob, n.Jobs}} {
		for _, name := range kn.names {
			if _, err := st.ExecContext(t.stmtCtx(ctx), kn.kind, name, micros(now)); err != nil {
				return fmt.Errorf("sqlite: notify %s %s: %w", kn.kind, name, err)
			}
		}
	}
	return nil
}

func jsonList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ss)
	return string(b)
}
