package sqlite

import (
	"bytes"
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

// txn is one transaction: a store.Tx on a *sql.Tx.
type txn struct {
	tx       *sql.Tx
	stmts    *stmtCache
	clock    clock.Clock
	readOnly bool
	now      time.Time
}

// stmt returns query prepared on this transaction's connection, from the
// driver's cache of statements prepared once.
func (t *txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := t.stmts.get(query)
	if err != nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st), nil
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
	st, err := t.stmt(ctx, qJobInsert)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		doc, err := marshal(j)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, j.ID, j.Tenant, j.Kind, j.Queue, string(j.State), j.Priority, j.Attempt, j.Rev,
			micros(j.RunAt), micros(j.CreatedAt), microsPtr(j.LeaseExpiresAt), microsPtr(j.TimeoutAt),
			microsPtr(j.CancelDeadline), microsPtr(j.Deadline), microsPtr(j.FinishedAt), j.DedupeKey, doc); err != nil {
			return fmt.Errorf("sqlite: insert job %s: %w", j.ID, err)
		}
	}
	return nil
}

func (t *txn) JobUpdate(ctx context.Context, updates []store.JobUpdate) error {
	st, err := t.stmt(ctx, qJobUpdate)
	if err != nil {
		return err
	}
	for _, u := range updates {
		j := u.Job
		doc, err := marshal(j)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, string(j.State), j.Priority, j.Attempt, j.Rev, micros(j.RunAt),
			microsPtr(j.LeaseExpiresAt), microsPtr(j.TimeoutAt), microsPtr(j.CancelDeadline), microsPtr(j.Deadline),
			microsPtr(j.FinishedAt), doc, j.ID, u.PrevRev)
		if err != nil {
			return fmt.Errorf("sqlite: update job %s: %w", j.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return &lifecycle.Error{Kind: store.ErrRevisionConflict, JobID: j.ID,
				Msg: fmt.Sprintf("the row is no longer at rev %d; read it again", u.PrevRev)}
		}
	}
	return nil
}

func (t *txn) JobGet(ctx context.Context, ids []string) ([]lifecycle.Job, error) {
	jobs, err := t.jobs(ctx, qJobGet, jsonList(ids))
	if err != nil || len(jobs) < 2 {
		return jobs, err
	}
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		if _, ok := pos[id]; !ok {
			pos[id] = i
		}
	}
	ordered := make([]lifecycle.Job, 0, len(jobs))
	byID := make(map[string]lifecycle.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
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
	kinds := jsonList(q.Kinds)
	var out []lifecycle.Job
	for _, queue := range q.Queues {
		jobs, err := t.jobs(ctx, qJobClaimable, queue, kinds, q.Limit)
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

// jobs runs a query whose only column is a job's doc.
func (t *txn) jobs(ctx context.Context, query string, args ...any) ([]lifecycle.Job, error) {
	return collect(ctx, t, query, func(rows *sql.Rows) (lifecycle.Job, error) {
		var doc []byte
		var j lifecycle.Job
		if err := rows.Scan(&doc); err != nil {
			return j, err
		}
		if err := json.Unmarshal(doc, &j); err != nil {
			return j, fmt.Errorf("sqlite: a job row holds unreadable JSON: %w", err)
		}
		return j, nil
	}, args...)
}

func (t *txn) EventInsert(ctx context.Context, events []lifecycle.Event) error {
	st, err := t.stmt(ctx, qEventInsert)
	if err != nil {
		return err
	}
	for _, e := range events {
		doc, err := marshal(e)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, e.JobID, e.Rev, string(e.Type), string(e.Op), e.RequestID, micros(e.At), doc); err != nil {
			return fmt.Errorf("sqlite: insert event %s rev %d: %w", e.JobID, e.Rev, err)
		}
	}
	return nil
}

func (t *txn) EventByRequest(ctx context.Context, jobID, requestID string) (lifecycle.Event, bool, error) {
	evs, err := t.events(ctx, qEventByRequest, jobID, requestID)
	if err != nil || len(evs) == 0 {
		return lifecycle.Event{}, false, err
	}
	return evs[0], true, nil
}

func (t *txn) EventList(ctx context.Context, jobIDs []string) ([]lifecycle.Event, error) {
	return t.events(ctx, qEventList, jsonList(jobIDs))
}

// events runs a query whose columns are an event's id and doc.
func (t *txn) events(ctx context.Context, query string, args ...any) ([]lifecycle.Event, error) {
	return collect(ctx, t, query, func(rows *sql.Rows) (lifecycle.Event, error) {
		var id int64
		var doc []byte
		var e lifecycle.Event
		if err := rows.Scan(&id, &doc); err != nil {
			return e, err
		}
		if err := json.Unmarshal(doc, &e); err != nil {
			return e, fmt.Errorf("sqlite: an event row holds unreadable JSON: %w", err)
		}
		e.ID = id
		return e, nil
	}, args...)
}

// collect runs query as a statement from the driver's cache and reads each
// row with scan, as pgx.CollectRows does for the PostgreSQL driver.
func collect[T any](ctx context.Context, t *txn, query string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
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

// Notify does nothing: SQLite serves one process, whose store wakes its own
// claimers after commit.
func (t *txn) Notify(context.Context, store.Notice) error { return nil }

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func jsonList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

// marshal encodes a record for a doc column without escaping HTML
// characters, so JSON values are stored as the lifecycle accepted them.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
