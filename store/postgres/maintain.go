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
	t.wrote = true
	err := t.pg.QueryRow(ctx, qLeaderElect, name, id, now, expiresAt).Scan(&term)
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
	t.wrote = true
	if _, err := t.pg.Exec(ctx, qLeaderResign, name, id); err != nil {
		return fmt.Errorf("postgres: resign leader of %s: %w", name, err)
	}
	return nil
}

// JobDeleteFinished deletes up to limit jobs finished before before, with
// their events and provenance, in one statement.
func (t *tx) JobDeleteFinished(ctx context.Context, before time.Time, limit int) (int, int, error) {
	var jobs, events, provs int64
	t.wrote = true
	if err := t.pg.QueryRow(ctx, qJobDeleteFinished, before, limit).Scan(&jobs, &events, &provs); err != nil {
		return 0, 0, fmt.Errorf("postgres: delete finished jobs: %w", err)
	}
	return int(jobs), int(events), nil
}

// EventPruneHeartbeats deletes up to limit heartbeat events older than before.
func (t *tx) EventPruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error) {
	t.wrote = true
	tag, err := t.pg.Exec(ctx, qEventPruneHeartbeats, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune heartbeat events: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
