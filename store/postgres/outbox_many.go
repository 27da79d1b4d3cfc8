package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/store"
)

const (
	// qOutboxHeadsOf is qOutboxHeads for the webhooks in $3 (all when empty)
	// and not in $4. It walks from the oldest pending message on (a seek in
	// outbox_pending_id, migration 0014), not over every delivered message
	// before it: in the statement's snapshot no pending row is older, and a
	// row committed later is seen by the next claim. The index's predicate
	// (next_attempt_at IS NOT NULL, always true) keeps it to the claims: a
	// fresh table's planner, given a plain index of the pending ids, used it
	// for the head test and the delivered update too, scanning every
	// pending row per message (5 s statements). OFFSET 0 keeps the head
	// test a subquery run per message walked (a seek in outbox_order): as
	// an anti-join, that planner joined every walked message with every
	// pending one (0.7-1.8 s statements).
	qOutboxHeadsOf = `SELECT id, ` + outboxColumns + ` FROM outbox o
    WHERE o.id >= (SELECT coalesce(min(id), 0) FROM outbox WHERE state = 'pending' AND next_attempt_at IS NOT NULL)
      AND o.state = 'pending' AND o.next_attempt_at <= $1
      AND (cardinality($3::text[]) = 0 OR o.webhook_id = ANY($3::text[]))
      AND NOT (o.webhook_id = ANY($4::text[]))
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.state = 'pending' AND p.webhook_id = o.webhook_id
          AND p.aggregate = o.aggregate AND p.aggregate_id = o.aggregate_id AND p.id < o.id OFFSET 0)
    ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED`
	// qCustomPlans plans the rest of the transaction's statements anew at
	// each execution, with their arguments and the tables' current sizes.
	// The outbox's statements are prepared once per connection, and a
	// prepared statement settles on a generic plan after five runs: one
	// made while the table was empty or nearly (a fresh database before
	// its first ANALYZE, every bench run) kept scanning every pending
	// message per message walked, or sorting the table for an update of a
	// thousand rows, long after the table had grown (0.7-5 s statements in
	// a 5,000-job bench). A claim's planning costs about a millisecond.
	qCustomPlans = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`
	// qOutboxLease adds an attempt to the messages of $2/$3 and makes them
	// due at $1, when their claimer's lease ends. The rows are found by
	// their ids (id = ANY: the primary key), then matched with the array;
	// a fresh table's planner otherwise scanned and sorted the table.
	qOutboxLease = `UPDATE outbox o SET attempts = o.attempts + 1, next_attempt_at = $1
    FROM unnest($2::bigint[], $3::timestamptz[]) AS m(id, created_at)
    WHERE o.id = ANY($2::bigint[]) AND o.id = m.id AND o.created_at = m.created_at`
	// qOutboxMarkDelivered sets delivered the messages still pending at the
	// attempt their claim returned, in one statement (rows found as in
	// qOutboxLease: a fresh table's planner otherwise sorted every pending
	// row for a merge join, 0.6-5 s statements).
	qOutboxMarkDelivered = `UPDATE outbox o SET state = 'delivered', delivered_at = $1, last_error = ''
    FROM unnest($2::bigint[], $3::timestamptz[], $4::int[]) AS m(id, created_at, attempts)
    WHERE o.id = ANY($2::bigint[]) AND o.id = m.id AND o.created_at = m.created_at AND o.attempts = m.attempts AND o.state = 'pending'
    RETURNING o.id`
)

var (
	_ store.OutboxLeaseTx       = (*tx)(nil)
	_ store.OutboxHeadsFilterTx = (*tx)(nil)
	_ store.OutboxDeliverManyTx = (*tx)(nil)
)

// OutboxHeadsOf implements store.OutboxHeadsFilterTx.
func (t *tx) OutboxHeadsOf(ctx context.Context, now time.Time, limit int, only, skip []string) ([]store.OutboxMessage, error) {
	if only == nil {
		only = []string{}
	}
	if skip == nil {
		skip = []string{}
	}
	t.pending.Queue(qCustomPlans).Exec(func(pgconn.CommandTag) error { return nil }) // goes out with the statement
	return runRows(ctx, t, qOutboxHeadsOf, []any{now, limit, only, skip}, scanOutbox)
}

// OutboxMarkDelivered implements store.OutboxDeliverManyTx in one statement.
func (t *tx) OutboxMarkDelivered(ctx context.Context, ms []store.OutboxMessage, at time.Time) ([]int64, error) {
	ids, created, attempts := make([]int64, len(ms)), make([]time.Time, len(ms)), make([]int32, len(ms))
	for i, m := range ms {
		ids[i], created[i], attempts[i] = m.ID, m.CreatedAt, int32(m.Attempts)
	}
	t.pending.Queue(qCustomPlans).Exec(func(pgconn.CommandTag) error { return nil }) // goes out with the statement
	return runRows(ctx, t, qOutboxMarkDelivered, []any{at, ids, created, attempts}, pgx.RowTo[int64])
}

// OutboxLease implements store.OutboxLeaseTx in one statement.
func (t *tx) OutboxLease(ctx context.Context, ms []store.OutboxMessage, until time.Time) error {
	ids, created := make([]int64, len(ms)), make([]time.Time, len(ms))
	for i, m := range ms {
		ids[i], created[i] = m.ID, m.CreatedAt
	}
	_, err := t.runExec(ctx, qOutboxLease, until, ids, created)
	return err
}
