package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// History is what the job events say happened, minute by minute and queue
// by queue, since a point in time: read from the partitioned job_events
// history (joined to the jobs for their queue), so it survives restarts and
// every server sharing the database reads the same. Reading it is a query
// of its own, never part of a claim or a completion.
type History struct {
	// At is the store's clock when the history was read.
	At time.Time `json:"at"`
	// Queued is the number of queued jobs of each queue at At: the depth the
	// minutes walk back from.
	Queued map[string]int `json:"queued"`
	// Minutes are ordered by minute, then queue; a minute with no event in
	// a queue is left out.
	Minutes []HistoryMinute `json:"minutes"`
}

// HistoryMinute counts the events of one queue in one minute.
type HistoryMinute struct {
	// Minute is the minute's start (UTC).
	Minute time.Time `json:"minute"`
	Queue  string    `json:"queue"`
	// Succeeded, Failed and DeadLettered count transitions into succeeded;
	// into retrying, failed or timed_out (failed attempts and timeouts); and
	// into dead_lettered.
	Succeeded    int `json:"succeeded"`
	Failed       int `json:"failed"`
	DeadLettered int `json:"dead_lettered"`
	// Entered and Left count the jobs that became queued and that stopped
	// being queued: the queue's depth moved by Entered-Left in the minute.
	Entered int `json:"entered"`
	Left    int `json:"left"`
	// Pickup and Run are histograms over LatencyBounds: how long each job
	// claimed in the minute had waited queued, and how long each attempt
	// that ended in the minute had run (started to its end).
	Pickup []int `json:"pickup"`
	Run    []int `json:"run"`
}

// LatencyBounds are the upper bounds, in milliseconds, of the buckets of
// HistoryMinute's histograms; one last bucket holds everything longer. A
// percentile read from them is the bound of its bucket: within one step
// of this 1-2-5 scale.
var LatencyBounds = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000,
	60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000}

// HistoryBucketSQL returns the SQL expression that puts the milliseconds
// of expr in their LatencyBounds bucket (0..len(LatencyBounds)), the same
// on every backend.
func HistoryBucketSQL(expr string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, bound := range LatencyBounds {
		fmt.Fprintf(&b, " WHEN %s < %s THEN %d", expr, strconv.FormatFloat(bound, 'f', -1, 64), i)
	}
	fmt.Fprintf(&b, " ELSE %d END", len(LatencyBounds))
	return b.String()
}

// MaxHistory is the longest history one read may ask for.
const MaxHistory = 8 * 24 * time.Hour

// HistoryRow is one row a driver's history query returns: a count for one
// metric ("succeeded", "failed", "dead_lettered", "entered", "left",
// "pickup", "run") of one queue in one minute (minutes since the Unix
// epoch), and for the histograms its bucket.
type HistoryRow struct {
	Minute int64
	Queue  string
	Metric string
	Bucket int
	Count  int
}

// HistoryTx is implemented by a driver's Tx that reads the history.
type HistoryTx interface {
	// HistoryRows returns the counts of the events at or after since,
	// grouped by minute, queue, metric and bucket.
	HistoryRows(ctx context.Context, since time.Time) ([]HistoryRow, error)
	// QueuedByQueue counts the queued jobs of each queue.
	QueuedByQueue(ctx context.Context) (map[string]int, error)
}

// HistoryReader is implemented by every Store [New] returns whose driver
// reads the history.
type HistoryReader interface {
	// HistoryRead reads the history since since (at most MaxHistory ago).
	HistoryRead(ctx context.Context, since time.Time) (History, error)
}

// HistoryOf returns s's history reader, or that of the store a wrapper
// (metrics, tracing) holds, or ErrUnsupported.
func HistoryOf(s Store) (HistoryReader, error) {
	if h, ok := As[HistoryReader](s); ok {
		return h, nil
	}
	return nil, fmt.Errorf("history: %w", ErrUnsupported)
}

var _ HistoryReader = (*engine)(nil)

// HistoryRead implements HistoryReader in one read transaction.
func (e *engine) HistoryRead(ctx context.Context, since time.Time) (History, error) {
	var out History
	err := e.d.Read(ctx, func(tx Tx) error {
		ht, ok := tx.(HistoryTx)
		if !ok {
			return fmt.Errorf("history: %w", ErrUnsupported)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if now.Sub(since) > MaxHistory {
			return fmt.Errorf("%w: history since %s reaches back more than %s: ask for less",
				ErrValidation, since.Format(time.RFC3339), MaxHistory)
		}
		rows, err := ht.HistoryRows(ctx, since.Truncate(time.Minute))
		if err != nil {
			return err
		}
		queued, err := ht.QueuedByQueue(ctx)
		if err != nil {
			return err
		}
		out = History{At: now, Queued: queued, Minutes: foldHistory(rows)}
		return nil
	})
	return out, err
}

// foldHistory turns the driver's rows into minutes, ordered by minute and
// queue (the rows come so ordered).
func foldHistory(rows []HistoryRow) []HistoryMinute {
	out := []HistoryMinute{}
	for _, r := range rows {
		minute := time.Unix(r.Minute*60, 0).UTC()
		if n := len(out); n == 0 || !out[n-1].Minute.Equal(minute) || out[n-1].Queue != r.Queue {
			out = append(out, HistoryMinute{Minute: minute, Queue: r.Queue,
				Pickup: make([]int, len(LatencyBounds)+1), Run: make([]int, len(LatencyBounds)+1)})
		}
		m := &out[len(out)-1]
		switch r.Metric {
		case "succeeded":
			m.Succeeded += r.Count
		case "failed":
			m.Failed += r.Count
		case "dead_lettered":
			m.DeadLettered += r.Count
		case "entered":
			m.Entered += r.Count
		case "left":
			m.Left += r.Count
		case "pickup":
			m.Pickup[min(max(r.Bucket, 0), len(LatencyBounds))] += r.Count
		case "run":
			m.Run[min(max(r.Bucket, 0), len(LatencyBounds))] += r.Count
		}
	}
	return out
}

// HistorySQL builds the history query both backends run, from their
// dialect's pieces: minute is the epoch minute of e.at, since the
// condition that starts the scan at the first parameter, and ms(a, b) the
// milliseconds from b to a. Events are joined to their job for its queue; a
// pickup is timed from the job's latest event that queued it, a run from
// its latest start, both found through the (job_id, rev) index.
func HistorySQL(minute, since string, ms func(a, b string) string) string {
	const queuedAt = `(SELECT max(p.at) FROM job_events p WHERE p.job_id = ev.job_id AND p.rev < ev.rev
            AND p.to_state = 'queued' AND p.from_state <> 'queued')`
	const startedAt = `(SELECT max(p.at) FROM job_events p WHERE p.job_id = ev.job_id AND p.rev < ev.rev
            AND p.to_state = 'running' AND p.from_state IN ('claimed', 'queued'))`
	return `WITH ev AS (
    SELECT e.job_id, e.rev, e.at, e.from_state, e.to_state, j.queue, ` + minute + ` AS minute
    FROM job_events e JOIN jobs j ON j.id = e.job_id
    WHERE ` + since + ` AND e.from_state <> e.to_state)
SELECT minute, queue, metric, bucket, count(*) FROM (
    SELECT minute, queue, CASE WHEN to_state IN ('succeeded', 'dead_lettered') THEN to_state ELSE 'failed' END AS metric,
        0 AS bucket FROM ev WHERE to_state IN ('succeeded', 'dead_lettered', 'retrying', 'failed', 'timed_out')
    UNION ALL SELECT minute, queue, 'entered', 0 FROM ev WHERE to_state = 'queued'
    UNION ALL SELECT minute, queue, 'left', 0 FROM ev WHERE from_state = 'queued'
    UNION ALL SELECT minute, queue, 'pickup', ` + HistoryBucketSQL("w.ms") + ` FROM (
        SELECT minute, queue, ` + ms("ev.at", queuedAt) + ` AS ms FROM ev
        WHERE from_state = 'queued' AND to_state IN ('claimed', 'running')) w WHERE w.ms IS NOT NULL
    UNION ALL SELECT minute, queue, 'run', ` + HistoryBucketSQL("w.ms") + ` FROM (
        SELECT minute, queue, ` + ms("ev.at", startedAt) + ` AS ms FROM ev
        WHERE from_state IN ('running', 'cancel_requested') AND to_state NOT IN ('claimed', 'running', 'cancel_requested')) w
        WHERE w.ms IS NOT NULL
) m GROUP BY minute, queue, metric, bucket ORDER BY minute, queue, metric, bucket`
}

// QueuedByQueueSQL counts the queued jobs of each queue.
const QueuedByQueueSQL = `SELECT queue, count(*) FROM jobs WHERE state = 'queued' GROUP BY queue`
