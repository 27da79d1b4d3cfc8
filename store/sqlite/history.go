package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/stint-dev/stint/store"
)

// qHistory reads the history from the events with ids from ?2 on (found by
// firstEventSince, as job_events has no index on at that every insert
// would pay for) and at or after ?1.
var qHistory = store.HistorySQL(`e.at / 60000000`, `e.id >= ?2 AND e.at >= ?1`,
	func(a, b string) string { return `(` + a + ` - ` + b + `) / 1000.0` })

// historySlack is how far before since the id search aims, so events
// written a little out of clock order are still found.
const historySlack = 10 * time.Minute

// HistoryRows implements store.HistoryTx.
func (t *txn) HistoryRows(ctx context.Context, since time.Time) ([]store.HistoryRow, error) {
	first, err := t.firstEventSince(ctx, since.Add(-historySlack))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the history: %w", err)
	}
	out, err := rowsOf(func(r *sql.Rows) (store.HistoryRow, error) {
		var h store.HistoryRow
		return h, r.Scan(&h.Minute, &h.Queue, &h.Metric, &h.Bucket, &h.Count)
	})(t.query(ctx, qHistory, micros(since), first))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the history: %w", err)
	}
	return out, nil
}

// firstEventSince finds, by binary search over the primary key, the first
// event id whose at is at or after since: ids grow with time, so about 40
// point reads stand in for an index on at.
func (t *txn) firstEventSince(ctx context.Context, since time.Time) (int64, error) {
	var lo, hi int64
	err := t.q.QueryRowContext(t.stmtCtx(ctx), `SELECT COALESCE(min(id), 0), COALESCE(max(id), 0) FROM job_events`).Scan(&lo, &hi)
	if err != nil {
		return 0, err
	}
	at := micros(since)
	for lo < hi {
		mid := lo + (hi-lo)/2
		var got int64
		err := t.q.QueryRowContext(t.stmtCtx(ctx), `SELECT at FROM job_events WHERE id >= ? ORDER BY id LIMIT 1`, mid).Scan(&got)
		if err != nil {
			return 0, err
		}
		if got >= at {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// QueuedByQueue implements store.HistoryTx.
func (t *txn) QueuedByQueue(ctx context.Context) (map[string]int, error) {
	type count struct {
		queue string
		n     int
	}
	cs, err := rowsOf(func(r *sql.Rows) (count, error) {
		var c count
		return c, r.Scan(&c.queue, &c.n)
	})(t.query(ctx, store.QueuedByQueueSQL))
	if err != nil {
		return nil, fmt.Errorf("sqlite: count queued jobs: %w", err)
	}
	out := make(map[string]int, len(cs))
	for _, c := range cs {
		out[c.queue] = c.n
	}
	return out, nil
}
