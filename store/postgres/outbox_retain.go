package postgres

import (
	"context"
	"time"
)

// qOutboxPrune deletes finished messages (delivered, or dead-lettered) that
// ended before $1: delivered_at, or for a dead one its last attempt's time.
const qOutboxPrune = `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox
    WHERE state IN ('delivered', 'dead') AND COALESCE(delivered_at, next_attempt_at) < $1 ORDER BY id LIMIT $2)`

// OutboxDeleteFinished implements store.OutboxRetainTx.
func (t *tx) OutboxDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := t.runExec(ctx, qOutboxPrune, before, limit)
	return int(n), err
}
