package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

// qHistory reads the history from the partitioned job_events: the at range
// prunes partitions and uses each one's at index.
var qHistory = store.HistorySQL(`floor(extract(epoch FROM e.at) / 60)::bigint`, `e.at >= $1`,
	func(a, b string) string { return `extract(epoch FROM ` + a + ` - ` + b + `) * 1000` })

// HistoryRows implements store.HistoryTx.
func (t *tx) HistoryRows(ctx context.Context, since time.Time) ([]store.HistoryRow, error) {
	out, err := rows(ctx, t, qHistory, []any{since}, func(r pgx.CollectableRow) (store.HistoryRow, error) {
		var h store.HistoryRow
		var n int64
		err := r.Scan(&h.Minute, &h.Queue, &h.Metric, &h.Bucket, &n)
		h.Count = int(n)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read the history: %w", err)
	}
	return out, nil
}

// QueuedByQueue implements store.HistoryTx.
func (t *tx) QueuedByQueue(ctx context.Context) (map[string]int, error) {
	type count struct {
		queue string
		n     int64
	}
	cs, err := rows(ctx, t, store.QueuedByQueueSQL, nil, func(r pgx.CollectableRow) (count, error) {
		var c count
		return c, r.Scan(&c.queue, &c.n)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: count queued jobs: %w", err)
	}
	out := make(map[string]int, len(cs))
	for _, c := range cs {
		out[c.queue] = int(c.n)
	}
	return out, nil
}
