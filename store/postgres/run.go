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

// The run and outbox statements.
const (
	runColumns = `id, tenant, name, state, rev, on_failure, timeout, timeout_at, rerun_of, reason_code, reason,
    created_at, started_at, finished_at, reported_at, updated_at`
	qRunInsert = `INSERT INTO runs (` + runColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	qRunUpdate = `UPDATE runs SET state = $1, rev = $2, reason_code = $3, reason = $4, started_at = $5, finished_at = $6,
    reported_at = $7, updated_at = $8 WHERE id = $9 AND rev = $10`
	qRunGet     = `SELECT ` + runColumns + ` FROM runs WHERE id = $1 FOR UPDATE`
	qRunGetRead = `SELECT ` + runColumns + ` FROM runs WHERE id = $1`
	qRunList    = `SELECT ` + runColumns + ` FROM runs
    WHERE (cardinality($1::text[]) = 0 OR state = ANY($1)) AND id > $2 ORDER BY id LIMIT $3`
	qRunDue = `SELECT id FROM runs WHERE timeout_at IS NOT NULL AND timeout_at <= $1
    AND state IN ('queued', 'running', 'cancel_requested') ORDER BY timeout_at, id LIMIT $2`

	runEventColumns = `run_id, rev, type, op, from_state, to_state, at, actor, actor_id, job_id, reason_code, reason, details`
	qRunEventInsert = `INSERT INTO run_events (` + runEventColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	// Only the events since the run was created: a deleted run's events
	// stay until their partition goes (partitions.go), and its id may be
	// taken again.
	qRunEventList = `SELECT id, ` + runEventColumns + ` FROM run_events
    WHERE run_id = $1 AND at >= (SELECT created_at FROM runs WHERE id = $1) ORDER BY rev`
	qRunJobInsert = `INSERT INTO run_jobs (run_id, name, job_id, allow_failure, needs_success, planner) VALUES ($1, $2, $3, $4, $5, $6)`
	// Read without locks: the run's row lock serializes the transactions
	// that settle the run (runsettle.go in package store).
	qRunJobList = `SELECT r.run_id, r.name, r.job_id, r.allow_failure, r.needs_success, r.planner, j.state, j.depends_on
    FROM run_jobs r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1 ORDER BY j.step_index, r.name`
	webhookColumns = `id, url, secret, event_types, queues, kinds, runs, created_at`
	qWebhookInsert = `INSERT INTO webhooks (` + webhookColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	qWebhookList   = `SELECT ` + webhookColumns + ` FROM webhooks ORDER BY created_at, id`
	qWebhookDelete = `DELETE FROM webhooks WHERE id = $1`
	outboxColumns  = `webhook_id, aggregate, aggregate_id, event_type, payload, state, attempts, next_attempt_at, last_error, created_at, delivered_at`
	qOutboxInsert  = `INSERT INTO outbox (` + outboxColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	// qOutboxMatch writes one message per (event, webhook it passes), in
	// event order: the filters of store.OutboxCandidate.Pass, in SQL.
	qOutboxMatch = `INSERT INTO outbox (webhook_id, aggregate, aggregate_id, event_type, payload, state, attempts,
        next_attempt_at, last_error, created_at)
    SELECT w.id, c.aggregate, c.aggregate_id, c.event_type, c.payload::json, 'pending', 0, c.at, '', c.at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
        WITH ORDINALITY AS c(aggregate, aggregate_id, event_type, queue, kind, run_id, payload, at, ord)
    JOIN webhooks w ON (cardinality(w.event_types) = 0 OR c.event_type = ANY(w.event_types))
        AND (c.aggregate <> 'job' OR cardinality(w.queues) = 0 OR c.queue = ANY(w.queues))
        AND (c.aggregate <> 'job' OR cardinality(w.kinds) = 0 OR c.kind = ANY(w.kinds))
        AND (cardinality(w.runs) = 0 OR c.run_id = ANY(w.runs))
    ORDER BY c.ord, w.id`
	// created_at, the partition key, lets the update visit one partition.
	qOutboxUpdate = `UPDATE outbox SET state = $1, attempts = $2, next_attempt_at = $3, last_error = $4, delivered_at = $5
    WHERE id = $6 AND created_at = $7`
	qOutboxGet  = `SELECT id, ` + outboxColumns + ` FROM outbox WHERE id = $1 FOR UPDATE`
	qOutboxList = `SELECT id, ` + outboxColumns + ` FROM outbox WHERE ($1 = '' OR state = $1) AND id > $2 ORDER BY id LIMIT $3`
	// A head is the oldest pending message of its (webhook, aggregate); the
	// rows other deliverers hold are skipped, and a claimed head is not due
	// until its claimer's lease ends, so order per aggregate holds on many nodes.
	qOutboxHeads = `SELECT id, ` + outboxColumns + ` FROM outbox o
    WHERE o.state = 'pending' AND o.next_attempt_at <= $1
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.state = 'pending' AND p.webhook_id = o.webhook_id
          AND p.aggregate = o.aggregate AND p.aggregate_id = o.aggregate_id AND p.id < o.id)
    ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED`
)

var _ store.RunTx = (*tx)(nil)

// runRows and runExec run the statements of this file at once (after the
// transaction's pending writes).
func runRows[T any](ctx context.Context, t *tx, sql string, args []any, scan pgx.RowToFunc[T]) ([]T, error) {
	return rows(ctx, t, sql, args, scan)
}

func (t *tx) runExec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (t *tx) RunInsert(ctx context.Context, r lifecycle.Run) error {
	_, err := t.runExec(ctx, qRunInsert, r.ID, r.Tenant, r.Name, string(r.State), r.Rev, string(r.OnFailure), int64(r.Timeout),
		r.TimeoutAt, r.RerunOf, r.ReasonCode, r.Reason, r.CreatedAt, r.StartedAt, r.FinishedAt, r.ReportedAt, r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("postgres: insert run %s: %w", r.ID, err)
	}
	return nil
}

func (t *tx) RunUpdate(ctx context.Context, r lifecycle.Run, prevRev int64) error {
	n, err := t.runExec(ctx, qRunUpdate, string(r.State), r.Rev, r.ReasonCode, r.Reason, r.StartedAt, r.FinishedAt,
		r.ReportedAt, r.UpdatedAt, r.ID, prevRev)
	if err != nil {
		return fmt.Errorf("postgres: update run %s: %w", r.ID, err)
	}
	if n != 1 {
		return &lifecycle.Error{Kind: store.ErrRevisionConflict, Msg: "run " + r.ID + " changed meanwhile; try again"}
	}
	return nil
}

func scanRun(row pgx.CollectableRow) (lifecycle.Run, error) {
	var r lifecycle.Run
	var state, onFailure string
	var timeout int64
	err := row.Scan(&r.ID, &r.Tenant, &r.Name, &state, &r.Rev, &onFailure, &timeout, &r.TimeoutAt, &r.RerunOf,
		&r.ReasonCode, &r.Reason, &r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.ReportedAt, &r.UpdatedAt)
	r.State, r.OnFailure, r.Timeout = lifecycle.RunState(state), lifecycle.FailurePolicy(onFailure), lifecycle.Duration(timeout)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	for _, p := range []*time.Time{r.TimeoutAt, r.StartedAt, r.FinishedAt, r.ReportedAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
	return r, err
}

// RunGet locks the run's row in a write transaction: every transition of
// one of its jobs settles the run under that lock.
func (t *tx) RunGet(ctx context.Context, id string) (lifecycle.Run, bool, error) {
	q := qRunGet
	if !t.write {
		q = qRunGetRead
	}
	rs, err := runRows(ctx, t, q, []any{id}, scanRun)
	if err != nil || len(rs) == 0 {
		return lifecycle.Run{}, false, err
	}
	return rs[0], true, nil
}

func (t *tx) RunList(ctx context.Context, p store.RunListParams) ([]lifecycle.Run, error) {
	states := make([]string, len(p.States))
	for i, s := range p.States {
		states[i] = string(s)
	}
	return runRows(ctx, t, qRunList, []any{states, p.AfterID, p.Limit}, scanRun)
}

func (t *tx) RunDue(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return runRows(ctx, t, qRunDue, []any{now, limit}, pgx.RowTo[string])
}

func (t *tx) RunEventInsert(ctx context.Context, events []lifecycle.RunEvent) error {
	for _, e := range events {
		var details any
		if len(e.Details) > 0 {
			details = string(e.Details)
		}
		if _, err := t.runExec(ctx, qRunEventInsert, e.RunID, e.Rev, string(e.Type), string(e.Op), string(e.FromState),
			string(e.ToState), e.At, string(e.Actor), e.ActorID, e.JobID, e.ReasonCode, e.Reason, details); err != nil {
			return fmt.Errorf("postgres: insert run event %s rev %d: %w", e.RunID, e.Rev, err)
		}
	}
	return nil
}

func (t *tx) RunEventList(ctx context.Context, runID string) ([]lifecycle.RunEvent, error) {
	return runRows(ctx, t, qRunEventList, []any{runID}, func(row pgx.CollectableRow) (lifecycle.RunEvent, error) {
		var e lifecycle.RunEvent
		var typ, op, from, to, actor string
		var details []byte
		err := row.Scan(&e.ID, &e.RunID, &e.Rev, &typ, &op, &from, &to, &e.At, &actor, &e.ActorID, &e.JobID,
			&e.ReasonCode, &e.Reason, &details)
		e.Type, e.Op, e.FromState, e.ToState = lifecycle.RunEventType(typ), lifecycle.RunOp(op), lifecycle.RunState(from), lifecycle.RunState(to)
		e.At, e.Actor = e.At.UTC(), lifecycle.Actor(actor)
		if len(details) > 0 {
			e.Details = json.RawMessage(details)
		}
		return e, err
	})
}

func (t *tx) RunJobInsert(ctx context.Context, jobs []store.RunJob) error {
	for _, j := range jobs {
		if _, err := t.runExec(ctx, qRunJobInsert, j.RunID, j.Name, j.JobID, j.AllowFailure, j.NeedsSuccess, j.Planner); err != nil {
			return fmt.Errorf("postgres: insert job %q of run %s: %w", j.Name, j.RunID, err)
		}
	}
	return nil
}

func (t *tx) RunJobList(ctx context.Context, runID string) ([]store.RunJob, error) {
	return runRows(ctx, t, qRunJobList, []any{runID}, func(row pgx.CollectableRow) (store.RunJob, error) {
		var j store.RunJob
		var state string
		err := row.Scan(&j.RunID, &j.Name, &j.JobID, &j.AllowFailure, &j.NeedsSuccess, &j.Planner, &state, &j.DependsOnIDs)
		j.State = lifecycle.State(state)
		return j, err
	})
}

func (t *tx) WebhookInsert(ctx context.Context, w store.Webhook) error {
	_, err := t.runExec(ctx, qWebhookInsert, w.ID, w.URL, w.Secret, nonNil(w.EventTypes), nonNil(w.Queues), nonNil(w.Kinds),
		nonNil(w.Runs), w.CreatedAt)
	return err
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func (t *tx) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	return runRows(ctx, t, qWebhookList, nil, func(row pgx.CollectableRow) (store.Webhook, error) {
		var w store.Webhook
		err := row.Scan(&w.ID, &w.URL, &w.Secret, &w.EventTypes, &w.Queues, &w.Kinds, &w.Runs, &w.CreatedAt)
		w.CreatedAt = w.CreatedAt.UTC()
		return w, err
	})
}

func (t *tx) WebhookDelete(ctx context.Context, id string) (bool, error) {
	n, err := t.runExec(ctx, qWebhookDelete, id)
	return n == 1, err
}

func (t *tx) OutboxInsert(ctx context.Context, ms []store.OutboxMessage) error {
	for _, m := range ms {
		if _, err := t.runExec(ctx, qOutboxInsert, m.WebhookID, m.Aggregate, m.AggregateID, m.EventType, string(m.Payload),
			string(m.State), m.Attempts, m.NextAttemptAt, m.LastError, m.CreatedAt, m.DeliveredAt); err != nil {
			return fmt.Errorf("postgres: insert outbox message: %w", err)
		}
	}
	return nil
}

func scanOutbox(row pgx.CollectableRow) (store.OutboxMessage, error) {
	var m store.OutboxMessage
	var payload []byte
	var state string
	err := row.Scan(&m.ID, &m.WebhookID, &m.Aggregate, &m.AggregateID, &m.EventType, &payload, &state, &m.Attempts,
		&m.NextAttemptAt, &m.LastError, &m.CreatedAt, &m.DeliveredAt)
	m.Payload, m.State = json.RawMessage(payload), store.OutboxState(state)
	m.NextAttemptAt, m.CreatedAt = m.NextAttemptAt.UTC(), m.CreatedAt.UTC()
	if m.DeliveredAt != nil {
		*m.DeliveredAt = m.DeliveredAt.UTC()
	}
	return m, err
}

func (t *tx) OutboxHeads(ctx context.Context, now time.Time, limit int) ([]store.OutboxMessage, error) {
	return runRows(ctx, t, qOutboxHeads, []any{now, limit}, scanOutbox)
}

func (t *tx) OutboxUpdate(ctx context.Context, ms []store.OutboxMessage) error {
	for _, m := range ms {
		if _, err := t.runExec(ctx, qOutboxUpdate, string(m.State), m.Attempts, m.NextAttemptAt, m.LastError, m.DeliveredAt, m.ID, m.CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) OutboxGet(ctx context.Context, id int64) (store.OutboxMessage, bool, error) {
	ms, err := runRows(ctx, t, qOutboxGet, []any{id}, scanOutbox)
	if err != nil || len(ms) == 0 {
		return store.OutboxMessage{}, false, err
	}
	return ms[0], true, nil
}

func (t *tx) OutboxList(ctx context.Context, p store.OutboxListParams) ([]store.OutboxMessage, error) {
	return runRows(ctx, t, qOutboxList, []any{string(p.State), p.AfterID, p.Limit}, scanOutbox)
}

// OutboxMatch queues the match with the transaction's other writes: no
// round trip of its own, and none at all when nothing else is sent.
func (t *tx) OutboxMatch(ctx context.Context, cs []store.OutboxCandidate) error {
	n := len(cs)
	aggs, ids, types, queues, kinds, runs, payloads := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ats := make([]time.Time, n)
	for i, c := range cs {
		body, err := c.Body()
		if err != nil {
			return err
		}
		aggs[i], ids[i], types[i], queues[i], kinds[i], runs[i] = c.Aggregate, c.AggregateID, c.EventType, c.Queue, c.Kind, c.RunID
		payloads[i], ats[i] = string(body), c.At
	}
	t.pending.Queue(qOutboxMatch, aggs, ids, types, queues, kinds, runs, payloads, ats).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: write %d events to the outbox: %w", n, err)
	})
	return nil
}
