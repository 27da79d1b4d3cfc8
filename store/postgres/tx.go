package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// tx is one transaction of the driver: the store's verbs translated to SQL.
type tx struct {
	pg      pgx.Tx
	channel string
	notify  bool
	write   bool

	now      time.Time // the transaction's start, once read
	notified map[string]bool
	// wrote tells that a statement changed rows; xid is the transaction's
	// id once known, for learning the outcome of a broken COMMIT.
	wrote bool
	xid   int64
}

var _ store.Tx = (*tx)(nil)

func newTx(pg pgx.Tx, opts Options, write bool) *tx {
	return &tx{pg: pg, channel: opts.channel(), notify: !opts.DisableNotify, write: write}
}

// Now returns the database's clock (statement_timestamp) the first time it is
// asked in the transaction, the same for every node sharing the database.
func (t *tx) Now(ctx context.Context) (time.Time, error) {
	if t.now.IsZero() {
		if err := t.pg.QueryRow(ctx, qNow).Scan(&t.now); err != nil {
			return time.Time{}, fmt.Errorf("postgres: read the clock: %w", err)
		}
		t.now = t.now.UTC()
	}
	return t.now, nil
}

func (t *tx) JobInsert(ctx context.Context, jobs []lifecycle.Job) error {
	c, err := jobColumnsOf(jobs, nil)
	if err != nil {
		return err
	}
	t.wrote = true
	if _, err := t.pg.Exec(ctx, qJobInsert, c.args()...); err != nil {
		return fmt.Errorf("postgres: insert %d jobs: %w", len(jobs), err)
	}
	return nil
}

func (t *tx) JobGet(ctx context.Context, ids []string) ([]lifecycle.Job, error) {
	q := qJobGet
	if t.write {
		q = qJobGetForUpdate
	}
	jobs, err := t.jobs(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	// Put them in the order asked for, each once.
	byID := make(map[string]lifecycle.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	out := jobs[:0]
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			out = append(out, j)
			delete(byID, id)
		}
	}
	return out, nil
}

func (t *tx) JobLiveByDedupe(ctx context.Context, tenant, key string) (lifecycle.Job, bool, error) {
	jobs, err := t.jobs(ctx, qJobLiveByDedupe, tenant, key)
	if err != nil || len(jobs) == 0 {
		return lifecycle.Job{}, false, err
	}
	return jobs[0], true, nil
}

func (t *tx) JobClaimable(ctx context.Context, q store.ClaimQuery) ([]lifecycle.Job, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	// Without fresh statistics (right after a bulk enqueue, before
	// autovacuum's analyze) PostgreSQL plans the claim as a bitmap scan of
	// every queued job and a sort: 78 ms per claim at 100,000 queued, against
	// 0.2 ms for the ordered walk of the claim index. Rule those plans out for
	// this transaction only.
	if _, err := t.pg.Exec(ctx, qClaimPlan); err != nil {
		return nil, err
	}
	return t.jobs(ctx, qJobClaimable, q.Queues, q.Kinds, q.Limit)
}

func (t *tx) JobDue(ctx context.Context, q store.DueQuery) ([]lifecycle.Job, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	var sql string
	switch q.Kind {
	case store.DuePromote:
		sql = qDuePromote
	case store.DueLeaseExpired:
		sql = qDueLeaseExpired
	case store.DueStalled:
		return t.jobs(ctx, qDueStalled, q.Limit)
	case store.DueCancelDeadline:
		sql = qDueCancelDeadline
	case store.DueTimeout:
		sql = qDueTimeout
	case store.DueDeadline:
		sql = qDueDeadline
	default:
		return nil, fmt.Errorf("postgres: unknown maintenance query %q", q.Kind)
	}
	return t.jobs(ctx, sql, q.Now, q.Limit)
}

func (t *tx) JobUpdate(ctx context.Context, updates []store.JobUpdate) error {
	jobs := make([]lifecycle.Job, len(updates))
	prev := make([]int64, len(updates))
	for i, u := range updates {
		jobs[i], prev[i] = u.Job, u.PrevRev
	}
	c, err := jobColumnsOf(jobs, prev)
	if err != nil {
		return err
	}
	t.wrote = true
	rows, err := t.pg.Query(ctx, qJobUpdate, c.args()...)
	if err != nil {
		return fmt.Errorf("postgres: update %d jobs: %w", len(updates), err)
	}
	changed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: update %d jobs: %w", len(updates), err)
	}
	if len(changed) == len(updates) {
		return nil
	}
	done := make(map[string]bool, len(changed))
	for _, id := range changed {
		done[id] = true
	}
	for _, u := range updates {
		if !done[u.Job.ID] {
			return &lifecycle.Error{Kind: store.ErrRevisionConflict, JobID: u.Job.ID,
				Msg: fmt.Sprintf("the job is no longer at rev %d: another writer changed it; read it again and retry", u.PrevRev)}
		}
	}
	return nil
}

func (t *tx) JobList(ctx context.Context, p store.JobListParams) ([]lifecycle.Job, error) {
	states := make([]string, len(p.States))
	for i, s := range p.States {
		states[i] = string(s)
	}
	return t.jobs(ctx, qJobList, states, p.Queue, p.Kind, p.AfterID, p.Limit)
}

func (t *tx) EventInsert(ctx context.Context, events []lifecycle.Event) error {
	n := len(events)
	var (
		jobIDs   = make([]string, n)
		revs     = make([]int64, n)
		types    = make([]string, n)
		ops      = make([]string, n)
		requests = make([]string, n)
		ats      = make([]time.Time, n)
		docs     = make([]string, n)
	)
	for i, e := range events {
		e.ID = 0 // the id column is the event's id
		doc, err := marshal(e)
		if err != nil {
			return fmt.Errorf("postgres: encode event of job %s: %w", e.JobID, err)
		}
		jobIDs[i], revs[i], types[i], ops[i] = e.JobID, e.Rev, string(e.Type), string(e.Op)
		requests[i], ats[i], docs[i] = e.RequestID, e.At, string(doc)
	}
	t.wrote = true
	if err := t.pg.QueryRow(ctx, qEventInsert, jobIDs, revs, types, ops, requests, ats, docs).Scan(&t.xid); err != nil {
		return fmt.Errorf("postgres: insert %d events: %w", n, err)
	}
	return nil
}

func (t *tx) EventByRequest(ctx context.Context, jobID, requestID string) (lifecycle.Event, bool, error) {
	if requestID == "" {
		return lifecycle.Event{}, false, nil
	}
	evs, err := t.events(ctx, qEventByRequest, jobID, requestID)
	if err != nil || len(evs) == 0 {
		return lifecycle.Event{}, false, err
	}
	return evs[0], true, nil
}

func (t *tx) EventList(ctx context.Context, jobIDs []string) ([]lifecycle.Event, error) {
	return t.events(ctx, qEventList, jobIDs)
}

func (t *tx) EventJobsByRequest(ctx context.Context, requestID string, typ lifecycle.EventType) ([]string, error) {
	if requestID == "" {
		return nil, nil
	}
	rows, err := t.pg.Query(ctx, qEventJobsByRequest, requestID, string(typ))
	if err != nil {
		return nil, fmt.Errorf("postgres: find jobs by request id: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: find jobs by request id: %w", err)
	}
	return ids, nil
}

// learnXactID reads the transaction's id before COMMIT when a statement
// wrote rows and none returned the id on the way.
func (t *tx) learnXactID(ctx context.Context) error {
	if !t.wrote || t.xid != 0 {
		return nil
	}
	if err := t.pg.QueryRow(ctx, qXactID).Scan(&t.xid); err != nil {
		return fmt.Errorf("postgres: read the transaction id: %w", err)
	}
	return nil
}

// jobs runs a query whose only column is a job's doc.
func (t *tx) jobs(ctx context.Context, sql string, args ...any) ([]lifecycle.Job, error) {
	rows, err := t.pg.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: read jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lifecycle.Job, error) {
		var doc []byte
		var j lifecycle.Job
		if err := r.Scan(&doc); err != nil {
			return j, err
		}
		if err := json.Unmarshal(doc, &j); err != nil {
			return j, fmt.Errorf("decode job: %w", err)
		}
		return j, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read jobs: %w", err)
	}
	return jobs, nil
}

// events runs a query whose columns are an event's id and doc.
func (t *tx) events(ctx context.Context, sql string, args ...any) ([]lifecycle.Event, error) {
	rows, err := t.pg.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lifecycle.Event, error) {
		var (
			id  int64
			doc []byte
			e   lifecycle.Event
		)
		if err := r.Scan(&id, &doc); err != nil {
			return e, err
		}
		if err := json.Unmarshal(doc, &e); err != nil {
			return e, fmt.Errorf("decode event %d: %w", id, err)
		}
		e.ID = id
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	return evs, nil
}
