package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/stint-dev/stint/store"
)

const (
	// qOutboxHeadsOf is qOutboxHeads for the webhooks in ?4 (all when ?3 is
	// 0) and not in ?5. It scans from the oldest pending message on (a seek
	// in outbox_pending_id, migration 0014, whose predicate the subquery
	// repeats), not over every delivered one before it (the table is
	// scanned in id order).
	qOutboxHeadsOf = `SELECT id, ` + outboxColumns + ` FROM outbox o
    WHERE o.id >= (SELECT coalesce(min(id), 0) FROM outbox WHERE state = 'pending' AND next_attempt_at IS NOT NULL)
      AND o.state = 'pending' AND o.next_attempt_at <= ?1
      AND (?3 = 0 OR o.webhook_id IN (SELECT value FROM json_each(?4)))
      AND o.webhook_id NOT IN (SELECT value FROM json_each(?5))
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.state = 'pending' AND p.webhook_id = o.webhook_id
          AND p.aggregate = o.aggregate AND p.aggregate_id = o.aggregate_id AND p.id < o.id)
    ORDER BY o.id LIMIT ?2`
	// qOutboxLease adds an attempt to the messages of ?2 (a JSON array of
	// ids) and makes them due at ?1, when their claimer's lease ends.
	qOutboxLease = `UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?1
    WHERE id IN (SELECT value FROM json_each(?2))`
	// qOutboxMarkDelivered sets delivered the messages of ?2 (a JSON object
	// of id → attempt) still pending at their attempt.
	qOutboxMarkDelivered = `UPDATE outbox SET state = 'delivered', delivered_at = ?1, last_error = ''
    FROM (SELECT CAST(key AS INTEGER) AS id, value AS attempts FROM json_each(?2)) AS m
    WHERE outbox.id = m.id AND outbox.attempts = m.attempts AND outbox.state = 'pending'
    RETURNING outbox.id`
)

var (
	_ store.OutboxLeaseTx       = (*txn)(nil)
	_ store.OutboxHeadsFilterTx = (*txn)(nil)
	_ store.OutboxDeliverManyTx = (*txn)(nil)
)

// OutboxHeadsOf implements store.OutboxHeadsFilterTx.
func (t *txn) OutboxHeadsOf(ctx context.Context, now time.Time, limit int, only, skip []string) ([]store.OutboxMessage, error) {
	return rowsOf(scanOutbox)(t.query(ctx, qOutboxHeadsOf, micros(now), limit, len(only), jsonList(only), jsonList(skip)))
}

// OutboxMarkDelivered implements store.OutboxDeliverManyTx in one statement.
func (t *txn) OutboxMarkDelivered(ctx context.Context, ms []store.OutboxMessage, at time.Time) ([]int64, error) {
	fence := make(map[int64]int, len(ms))
	for _, m := range ms {
		fence[m.ID] = m.Attempts
	}
	arg, err := json.Marshal(fence)
	if err != nil {
		return nil, err
	}
	return rowsOf(func(rows *sql.Rows) (int64, error) {
		var id int64
		return id, rows.Scan(&id)
	})(t.query(ctx, qOutboxMarkDelivered, micros(at), string(arg)))
}

// OutboxLease implements store.OutboxLeaseTx in one statement.
func (t *txn) OutboxLease(ctx context.Context, ms []store.OutboxMessage, until time.Time) error {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, qOutboxLease, micros(until), string(arg))
	return err
}
