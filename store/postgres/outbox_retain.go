package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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

// qRunsFinished selects finished runs ended before $1 whose jobs are all gone
// and whose outbox holds nothing still to deliver about them.
const qRunsFinished = `SELECT r.id FROM runs r
    WHERE r.state IN ('succeeded', 'failed', 'cancelled', 'timed_out') AND r.finished_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id)
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.aggregate = 'run' AND o.aggregate_id = r.id AND o.state = 'pending')
    ORDER BY r.id LIMIT $2 FOR UPDATE OF r`

// RunDeleteFinished implements store.OutboxRetainTx.
func (t *tx) RunDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	ids, err := rows(ctx, t, qRunsFinished, []any{before, limit}, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	for _, q := range []string{
		`DELETE FROM run_events WHERE run_id = ANY($1)`,
		`DELETE FROM run_jobs WHERE run_id = ANY($1)`,
		`DELETE FROM runs WHERE id = ANY($1)`,
	} {
		if _, err := t.runExec(ctx, q, ids); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
