package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/stint-dev/stint/store"
)

var (
	_ store.LeaderTx = (*txn)(nil)
	_ store.RetainTx = (*txn)(nil)
)

func (t *txn) LeaderAttemptElect(ctx context.Context, name, id string, now, expiresAt time.Time) (int64, bool, error) {
	var term int64
	err := t.q.QueryRowContext(ctx, qLeaderElect, name, id, micros(now), micros(expiresAt)).Scan(&term)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return term, err == nil, err
}

func (t *txn) LeaderResign(ctx context.Context, name, id string) error {
	_, err := t.q.ExecContext(ctx, qLeaderResign, name, id)
	return err
}

func (t *txn) JobDeleteFinished(ctx context.Context, before time.Time, limit int) (int, int, error) {
	rows, err := t.q.QueryContext(ctx, qFinishedSelect, micros(before), limit)
	if err != nil {
		return 0, 0, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil || len(ids) == 0 {
		return 0, 0, err
	}
	list := jsonList(ids)
	res, err := t.q.ExecContext(ctx, qDeleteEvents, list)
	if err != nil {
		return 0, 0, err
	}
	events, _ := res.RowsAffected()
	if _, err := t.q.ExecContext(ctx, qDeleteJobs, list); err != nil {
		return 0, 0, err
	}
	return len(ids), int(events), nil
}

func (t *txn) EventPruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := t.q.ExecContext(ctx, qPruneHeartbeat, micros(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
