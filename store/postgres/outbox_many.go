package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

const (
	// qOutboxHeadsOf is qOutboxHeads for the webhooks in $3 (all when empty)
	// and not in $4.
	qOutboxHeadsOf = `SELECT id, ` + outboxColumns + ` FROM outbox o
    WHERE o.state = 'pending' AND o.next_attempt_at <= $1
      AND (cardinality($3::text[]) = 0 OR o.webhook_id = ANY($3::text[]))
      AND NOT (o.webhook_id = ANY($4::text[]))
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.state = 'pending' AND p.webhook_id = o.webhook_id
          AND p.aggregate = o.aggregate AND p.aggregate_id = o.aggregate_id AND p.id < o.id)
    ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED`
	// qOutboxLease adds an attempt to the messages of $2/$3 and makes them
	// due at $1, when their claimer's lease ends.
	qOutboxLease = `UPDATE outbox o SET attempts = o.attempts + 1, next_attempt_at = $1
    FROM unnest($2::bigint[], $3::timestamptz[]) AS m(id, created_at)
    WHERE o.id = m.id AND o.created_at = m.created_at`
	// qOutboxMarkDelivered sets delivered the messages still pending at the
	// attempt their claim returned, in one statement.
	qOutboxMarkDelivered = `UPDATE outbox o SET state = 'delivered', delivered_at = $1, last_error = ''
    FROM unnest($2::bigint[], $3::timestamptz[], $4::int[]) AS m(id, created_at, attempts)
    WHERE o.id = m.id AND o.created_at = m.created_at AND o.attempts = m.attempts AND o.state = 'pending'
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
	return runRows(ctx, t, qOutboxHeadsOf, []any{now, limit, only, skip}, scanOutbox)
}

// OutboxMarkDelivered implements store.OutboxDeliverManyTx in one statement.
func (t *tx) OutboxMarkDelivered(ctx context.Context, ms []store.OutboxMessage, at time.Time) ([]int64, error) {
	ids, created, attempts := make([]int64, len(ms)), make([]time.Time, len(ms)), make([]int32, len(ms))
	for i, m := range ms {
		ids[i], created[i], attempts[i] = m.ID, m.CreatedAt, int32(m.Attempts)
	}
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
