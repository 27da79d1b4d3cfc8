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

// qRunsFinished selects finished runs ended before ?1 whose jobs are all gone
// and whose outbox holds nothing still to deliver about them.
const qRunsFinished = `SELECT r.id FROM runs r
    WHERE r.state IN ('succeeded', 'failed', 'cancelled', 'timed_out') AND r.finished_at < ?1
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id)
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.aggregate = 'run' AND o.aggregate_id = r.id AND o.state = 'pending')
    ORDER BY r.id LIMIT ?2`

// RunDeleteFinished implements store.OutboxRetainTx.
func (t *txn) RunDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	rows, err := t.query(ctx, qRunsFinished, micros(before), limit)
	if err != nil {
		return 0, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil || len(ids) == 0 {
		return 0, err
	}
	list := jsonList(ids)
	for _, q := range []string{
		`DELETE FROM run_events WHERE run_id IN (SELECT value FROM json_each(?))`,
		`DELETE FROM run_jobs WHERE run_id IN (SELECT value FROM json_each(?))`,
		`DELETE FROM runs WHERE id IN (SELECT value FROM json_each(?))`,
	} {
		if _, err := t.exec(ctx, q, list); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
