package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// The run and outbox statements are not in the driver's prepared cache: they
// run once per run transition, not per job.
const (
	runColumns = `id, tenant, name, state, rev, on_failure, timeout, timeout_at, rerun_of, reason_code, reason,
    created_at, started_at, finished_at, reported_at, updated_at`
	qRunInsert = `INSERT INTO runs (` + runColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qRunUpdate = `UPDATE runs SET state = ?, rev = ?, reason_code = ?, reason = ?, started_at = ?, finished_at = ?,
    reported_at = ?, updated_at = ? WHERE id = ? AND rev = ?`
	qRunGet  = `SELECT ` + runColumns + ` FROM runs WHERE id = ?`
	qRunList = `SELECT ` + runColumns + ` FROM runs
    WHERE (json_array_length(?1) = 0 OR state IN (SELECT value FROM json_each(?1))) AND id > ?2 ORDER BY id LIMIT ?3`
	qRunDue = `SELECT id FROM runs WHERE timeout_at IS NOT NULL AND timeout_at <= ?
    AND state IN ('queued', 'running', 'cancel_requested') ORDER BY timeout_at, id LIMIT ?`

	runEventColumns = `run_id, rev, type, op, from_state, to_state, at, actor, actor_id, job_id, reason_code, reason, details`
	qRunEventInsert = `INSERT INTO run_events (` + runEventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qRunEventList   = `SELECT id, ` + runEventColumns + ` FROM run_events WHERE run_id = ? ORDER BY rev`
	qRunJobInsert   = `INSERT INTO run_jobs (run_id, name, job_id, allow_failure, needs_success, planner) VALUES (?, ?, ?, ?, ?, ?)`
	qRunJobList     = `SELECT r.run_id, r.name, r.job_id, r.allow_failure, r.needs_success, r.planner, j.state, j.depends_on
    FROM run_jobs r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = ? ORDER BY j.step_index, r.name`
	webhookColumns = `id, url, secret, event_types, queues, kinds, runs, created_at`
	qWebhookInsert = `INSERT INTO webhooks (` + webhookColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qWebhookList   = `SELECT ` + webhookColumns + ` FROM webhooks ORDER BY created_at, id`
	qWebhookDelete = `DELETE FROM webhooks WHERE id = ?`
	outboxColumns  = `webhook_id, aggregate, aggregate_id, event_type, payload, state, attempts, next_attempt_at, last_error, created_at, delivered_at`
	// qOutboxInsertHead takes insertQuery's rows of 11 values.
	qOutboxInsertHead = `INSERT INTO outbox (` + outboxColumns + `)`
	qOutboxUpdate     = `UPDATE outbox SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, delivered_at = ? WHERE id = ?`
	qOutboxGet        = `SELECT id, ` + outboxColumns + ` FROM outbox WHERE id = ?`
	qOutboxList       = `SELECT id, ` + outboxColumns + ` FROM outbox WHERE (?1 = '' OR state = ?1) AND id > ?2 ORDER BY id LIMIT ?3`
	qOutboxHeads      = `SELECT id, ` + outboxColumns + ` FROM outbox o
    WHERE o.state = 'pending' AND o.next_attempt_at <= ?1
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.state = 'pending' AND p.webhook_id = o.webhook_id
          AND p.aggregate = o.aggregate AND p.aggregate_id = o.aggregate_id AND p.id < o.id)
    ORDER BY o.id LIMIT ?2`
)

var _ store.RunTx = (*txn)(nil)

// exec and query run a statement of this file in the transaction.
func (t *txn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.q.ExecContext(t.stmtCtx(ctx), q, args...)
}

func (t *txn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.q.QueryContext(t.stmtCtx(ctx), q, args...)
}

// rowsOf reads every row of a query with scan: rowsOf(scan)(t.query(...)).
func rowsOf[T any](scan func(*sql.Rows) (T, error)) func(*sql.Rows, error) ([]T, error) {
	return func(rows *sql.Rows, err error) ([]T, error) {
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
}

func (t *txn) RunInsert(ctx context.Context, r lifecycle.Run) error {
	_, err := t.exec(ctx, qRunInsert, r.ID, r.Tenant, r.Name, string(r.State), r.Rev, string(r.OnFailure), int64(r.Timeout),
		microsPtr(r.TimeoutAt), r.RerunOf, r.ReasonCode, r.Reason, micros(r.CreatedAt), microsPtr(r.StartedAt),
		microsPtr(r.FinishedAt), microsPtr(r.ReportedAt), micros(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("sqlite: insert run %s: %w", r.ID, err)
	}
	return nil
}

func (t *txn) RunUpdate(ctx context.Context, r lifecycle.Run, prevRev int64) error {
	res, err := t.exec(ctx, qRunUpdate, string(r.State), r.Rev, r.ReasonCode, r.Reason, microsPtr(r.StartedAt),
		microsPtr(r.FinishedAt), microsPtr(r.ReportedAt), micros(r.UpdatedAt), r.ID, prevRev)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return &lifecycle.Error{Kind: store.ErrRevisionConflict, Msg: "run " + r.ID + " changed meanwhile; try again"}
	}
	return nil
}

func scanRun(rows *sql.Rows) (lifecycle.Run, error) {
	var r lifecycle.Run
	var state, onFailure string
	var timeout, created, updated int64
	var timeoutAt, started, finished, reported sql.NullInt64
	err := rows.Scan(&r.ID, &r.Tenant, &r.Name, &state, &r.Rev, &onFailure, &timeout, &timeoutAt, &r.RerunOf,
		&r.ReasonCode, &r.Reason, &created, &started, &finished, &reported, &updated)
	r.State, r.OnFailure, r.Timeout = lifecycle.RunState(state), lifecycle.FailurePolicy(onFailure), lifecycle.Duration(timeout)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	r.TimeoutAt, r.StartedAt, r.FinishedAt, r.ReportedAt = timePtr(timeoutAt), timePtr(started), timePtr(finished), timePtr(reported)
	return r, err
}

func (t *txn) RunGet(ctx context.Context, id string) (lifecycle.Run, bool, error) {
	rs, err := rowsOf(scanRun)(t.query(ctx, qRunGet, id))
	if err != nil || len(rs) == 0 {
		return lifecycle.Run{}, false, err
	}
	return rs[0], true, nil
}

func (t *txn) RunList(ctx context.Context, p store.RunListParams) ([]lifecycle.Run, error) {
	states := make([]string, len(p.States))
	for i, s := range p.States {
		states[i] = string(s)
	}
	return rowsOf(scanRun)(t.query(ctx, qRunList, jsonList(states), p.AfterID, p.Limit))
}

func (t *txn) RunDue(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return rowsOf(func(rows *sql.Rows) (string, error) {
		var id string
		return id, rows.Scan(&id)
	})(t.query(ctx, qRunDue, micros(now), limit))
}

func (t *txn) RunEventInsert(ctx context.Context, events []lifecycle.RunEvent) error {
	for _, e := range events {
		var details any
		if len(e.Details) > 0 {
			details = string(e.Details)
		}
		if _, err := t.exec(ctx, qRunEventInsert, e.RunID, e.Rev, string(e.Type), string(e.Op), string(e.FromState),
			string(e.ToState), micros(e.At), string(e.Actor), e.ActorID, e.JobID, e.ReasonCode, e.Reason, details); err != nil {
			return fmt.Errorf("sqlite: insert run event %s rev %d: %w", e.RunID, e.Rev, err)
		}
	}
	return nil
}

func (t *txn) RunEventList(ctx context.Context, runID string) ([]lifecycle.RunEvent, error) {
	return rowsOf(func(rows *sql.Rows) (lifecycle.RunEvent, error) {
		var e lifecycle.RunEvent
		var typ, op, from, to, actor string
		var at int64
		var details sql.NullString
		err := rows.Scan(&e.ID, &e.RunID, &e.Rev, &typ, &op, &from, &to, &at, &actor, &e.ActorID, &e.JobID,
			&e.ReasonCode, &e.Reason, &details)
		e.Type, e.Op, e.FromState, e.ToState = lifecycle.RunEventType(typ), lifecycle.RunOp(op), lifecycle.RunState(from), lifecycle.RunState(to)
		e.At, e.Actor = fromMicros(at), lifecycle.Actor(actor)
		if details.Valid {
			e.Details = json.RawMessage(details.String)
		}
		return e, err
	})(t.query(ctx, qRunEventList, runID))
}

func (t *txn) RunJobInsert(ctx context.Context, jobs []store.RunJob) error {
	for _, j := range jobs {
		if _, err := t.exec(ctx, qRunJobInsert, j.RunID, j.Name, j.JobID, j.AllowFailure, j.NeedsSuccess, j.Planner); err != nil {
			return fmt.Errorf("sqlite: insert job %q of run %s: %w", j.Name, j.RunID, err)
		}
	}
	return nil
}

func (t *txn) RunJobList(ctx context.Context, runID string) ([]store.RunJob, error) {
	return rowsOf(func(rows *sql.Rows) (store.RunJob, error) {
		var j store.RunJob
		var state string
		var deps sql.NullString
		if err := rows.Scan(&j.RunID, &j.Name, &j.JobID, &j.AllowFailure, &j.NeedsSuccess, &j.Planner, &state, &deps); err != nil {
			return j, err
		}
		j.State = lifecycle.State(state)
		if deps.Valid && deps.String != "" {
			if err := json.Unmarshal([]byte(deps.String), &j.DependsOnIDs); err != nil {
				return j, fmt.Errorf("sqlite: depends_on of job %s: %w", j.JobID, err)
			}
		}
		return j, nil
	})(t.query(ctx, qRunJobList, runID))
}

func (t *txn) WebhookInsert(ctx context.Context, w store.Webhook) error {
	_, err := t.exec(ctx, qWebhookInsert, w.ID, w.URL, w.Secret, jsonList(w.EventTypes), jsonList(w.Queues),
		jsonList(w.Kinds), jsonList(w.Runs), micros(w.CreatedAt))
	return err
}

func (t *txn) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	return rowsOf(func(rows *sql.Rows) (store.Webhook, error) {
		var w store.Webhook
		var types, queues, kinds, runs string
		var created int64
		if err := rows.Scan(&w.ID, &w.URL, &w.Secret, &types, &queues, &kinds, &runs, &created); err != nil {
			return w, err
		}
		w.CreatedAt = fromMicros(created)
		for _, f := range []struct {
			s   string
			dst *[]string
		}{{types, &w.EventTypes}, {queues, &w.Queues}, {kinds, &w.Kinds}, {runs, &w.Runs}} {
			if err := json.Unmarshal([]byte(f.s), f.dst); err != nil {
				return w, fmt.Errorf("sqlite: webhook %s filters: %w", w.ID, err)
			}
		}
		return w, nil
	})(t.query(ctx, qWebhookList))
}

func (t *txn) WebhookDelete(ctx context.Context, id string) (bool, error) {
	res, err := t.exec(ctx, qWebhookDelete, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// OutboxInsert writes up to insertChunk messages per statement, prepared
// once on the writer's connection: every transition of a bridged job writes
// a message, and one statement per message, parsed anew each time, was
// most of the writer's outbox writing in the bus bench's profile.
func (t *txn) OutboxInsert(ctx context.Context, ms []store.OutboxMessage) error {
	const cols = 11 // outboxColumns
	for len(ms) > 0 {
		chunk := ms[:min(len(ms), insertChunk)]
		ms = ms[len(chunk):]
		args := make([]any, 0, cols*len(chunk))
		for _, m := range chunk {
			args = append(args, m.WebhookID, m.Aggregate, m.AggregateID, m.EventType, string(m.Payload),
				string(m.State), m.Attempts, micros(m.NextAttemptAt), m.LastError, micros(m.CreatedAt), microsPtr(m.DeliveredAt))
		}
		st, err := t.prep(ctx, insertQuery(qOutboxInsertHead, cols, len(chunk)))
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(t.stmtCtx(ctx), args...); err != nil {
			return fmt.Errorf("sqlite: insert outbox messages of %s %s (and %d more): %w", chunk[0].Aggregate, chunk[0].AggregateID, len(chunk)-1, err)
		}
	}
	return nil
}

func scanOutbox(rows *sql.Rows) (store.OutboxMessage, error) {
	var m store.OutboxMessage
	var payload, state string
	var next, created int64
	var delivered sql.NullInt64
	err := rows.Scan(&m.ID, &m.WebhookID, &m.Aggregate, &m.AggregateID, &m.EventType, &payload, &state, &m.Attempts,
		&next, &m.LastError, &created, &delivered)
	m.Payload, m.State = json.RawMessage(payload), store.OutboxState(state)
	m.NextAttemptAt, m.CreatedAt, m.DeliveredAt = fromMicros(next), fromMicros(created), timePtr(delivered)
	return m, err
}

// OutboxHeads needs no row locks: SQLite has one writer at a time.
func (t *txn) OutboxHeads(ctx context.Context, now time.Time, limit int) ([]store.OutboxMessage, error) {
	return rowsOf(scanOutbox)(t.query(ctx, qOutboxHeads, micros(now), limit))
}

func (t *txn) OutboxUpdate(ctx context.Context, ms []store.OutboxMessage) error {
	for _, m := range ms {
		if _, err := t.exec(ctx, qOutboxUpdate, string(m.State), m.Attempts, micros(m.NextAttemptAt), m.LastError,
			microsPtr(m.DeliveredAt), m.ID); err != nil {
			return err
		}
	}
	return nil
}

func (t *txn) OutboxGet(ctx context.Context, id int64) (store.OutboxMessage, bool, error) {
	ms, err := rowsOf(scanOutbox)(t.query(ctx, qOutboxGet, id))
	if err != nil || len(ms) == 0 {
		return store.OutboxMessage{}, false, err
	}
	return ms[0], true, nil
}

func (t *txn) OutboxList(ctx context.Context, p store.OutboxListParams) ([]store.OutboxMessage, error) {
	return rowsOf(scanOutbox)(t.query(ctx, qOutboxList, string(p.State), p.AfterID, p.Limit))
}

// OutboxMatch matches in Go: SQLite is in-process, so reading the webhooks
// costs no round trip.
func (t *txn) OutboxMatch(ctx context.Context, cs []store.OutboxCandidate) error {
	hooks, err := t.WebhookList(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	var ms []store.OutboxMessage
	for _, c := range cs {
		var body json.RawMessage
		for _, w := range hooks {
			if !c.Pass(w) {
				continue
			}
			if body == nil {
				if body, err = c.Body(); err != nil {
					return err
				}
			}
			ms = append(ms, store.OutboxMessage{WebhookID: w.ID, Aggregate: c.Aggregate, AggregateID: c.AggregateID,
				EventType: c.EventType, Payload: body, State: store.OutboxPending, NextAttemptAt: c.At, CreatedAt: c.At})
		}
	}
	return t.OutboxInsert(ctx, ms)
}
