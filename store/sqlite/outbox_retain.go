package sqlite

import (
	"context"
	"time"
)

// qOutboxPrune deletes finished messages (delivered, or dead-lettered) that
// ended before ?1: delivered_at, or for a dead one its last attempt's time.
const qOutboxPrune = `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox
    WHERE state IN ('delivered', 'dead') AND COALESCE(delivered_at, next_attempt_at) < ?1 ORDER BY id LIMIT ?2)`

// OutboxDeleteFinished implements store.OutboxRetainTx.
func (t *txn) OutboxDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := t.exec(ctx, qOutboxPrune, micros(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
