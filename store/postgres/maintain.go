package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

var (
	_ store.LeaderTx = (*tx)(nil)
	_ store.RetainTx = (*tx)(nil)
)

// LeaderAttemptElect takes or renews the seat name for id; see store.LeaderTx.
func (t *tx) LeaderAttemptElect(ctx context.Context, name, id string, now, expiresAt time.Time) (int64, bool, error) {
	var term int64
	err := t.queryRow(ctx, qLeaderElect, []any{name, id, now, expiresAt}, &term)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("postgres: elect leader of %s: %w", name, err)
	}
	return term, true, nil
}

// LeaderResign frees the seat name if id holds it.
func (t *tx) LeaderResign(ctx context.Context, name, id string) error {
	if _, err := t.exec(ctx, qLeaderResign, name, id); err != nil {
		return fmt.Errorf("postgres: resign leader of %s: %w", name, err)
	}
	return nil
}

// JobDeleteFinished deletes up to limit jobs finished before before and
// counts their events, which leave the API with them (events are read
// joined to their job) and leave the disk with their partition: once a call
// finds fewer than limit jobs left to delete, it drops the job_events
// partitions nothing live holds any more (see dropPartitions). The count of
// events is of those that became unreachable. Partitions are made ahead by
// EnsurePartitions, which the retention service calls on every pass.
func (t *tx) JobDeleteFinished(ctx context.Context, before time.Time, limit int) (int, int, error) {
	var jobs, events int64
	if err := t.queryRow(ctx, qJobDeleteFinished, []any{before, limit}, &jobs, &events); err != nil {
		return 0, 0, fmt.Errorf("postgres: delete finished jobs: %w", err)
	}
	if int(jobs) < limit {
		if _, err := t.dropPartitions(ctx, history("job_events"), before); err != nil {
			return 0, 0, err
		}
	}
	return int(jobs), int(events), nil
}

// EventPruneHeartbeats deletes nothing on PostgreSQL: history leaves only
// by whole partitions (see dropPartitions), never by row DELETEs, which
// would leave dead rows for vacuum in the busiest table.
func (t *tx) EventPruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error) {
	return 0, nil
}

// PartitionedHistory reports that the history (job_events, run_events,
// outbox) is partitioned by time: retention drops whole partitions, never
// rows (see store.PrunesHeartbeats).
func (d *Driver) PartitionedHistory() bool { return true }
