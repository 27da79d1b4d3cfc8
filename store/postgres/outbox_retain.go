package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutboxDeleteFinished implements store.OutboxRetainTx without deleting a
// row: the outbox is partitioned by created_at, and it drops the partitions
// that ended before before and hold no pending message nor one that ended
// (delivered or dead-lettered) after it (see dropPartitions). It returns
// how many messages went with them. limit does not apply: a partition goes
// whole or not at all.
func (t *tx) OutboxDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	return t.dropPartitions(ctx, history("outbox"), before)
}

// qRunsFinished selects finished runs ended before $1 whose jobs are all gone
// and whose outbox holds nothing still to deliver about them.
const qRunsFinished = `SELECT r.id FROM runs r
    WHERE r.state IN ('succeeded', 'failed', 'cancelled', 'timed_out') AND r.finished_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id)
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.aggregate = 'run' AND o.aggregate_id = r.id AND o.state = 'pending')
    ORDER BY r.id LIMIT $2 FOR UPDATE OF r`

// RunDeleteFinished implements store.OutboxRetainTx: it deletes the runs'
// rows and their run_jobs, and leaves their events to go with their
// partition. Once a call finds fewer than limit runs left, it drops the
// run_events partitions that no remaining run has an event in (see
// dropPartitions); events are read only for a run that exists, and only
// those since it was created, so a deleted run's are unreachable at once.
func (t *tx) RunDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	ids, err := rows(ctx, t, qRunsFinished, []any{before, limit}, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	if len(ids) > 0 {
		for _, q := range []string{
			`DELETE FROM run_jobs WHERE run_id = ANY($1)`,
			`DELETE FROM runs WHERE id = ANY($1)`,
		} {
			if _, err := t.runExec(ctx, q, ids); err != nil {
				return 0, err
			}
		}
	}
	if len(ids) < limit {
		if _, err := t.dropPartitions(ctx, history("run_events"), before); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
