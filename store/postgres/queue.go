package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

var _ store.QueueTx = (*tx)(nil)

const (
	queueColumns       = `name, paused, max_running, rate_limit, rate_interval, rate_log, updated_at, fair, weights, key_limit, defaults`
	qQueueLimitedNames = `SELECT name FROM queues WHERE paused OR max_running > 0 OR rate_limit > 0 OR fair OR key_limit > 0`
	qQueueGet          = `SELECT ` + queueColumns + ` FROM queues WHERE name = $1`
	// Locking the row makes the claimers of a limited queue on every node
	// take turns, so each counts the claims of the one before.
	qQueueGetLock = qQueueGet + ` FOR UPDATE`
	qQueueList    = `SELECT ` + queueColumns + ` FROM queues ORDER BY name`
	qQueuePut     = `INSERT INTO queues (` + queueColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, max_running = excluded.max_running,
        rate_limit = excluded.rate_limit, rate_interval = excluded.rate_interval,
        rate_log = excluded.rate_log, updated_at = excluded.updated_at,
        fair = excluded.fair, weights = excluded.weights, key_limit = excluded.key_limit, defaults = excluded.defaults`
	qQueueDefaults  = `SELECT name, defaults FROM queues WHERE defaults <> ''`
	qJobCountLeased = `SELECT count(*) FROM jobs WHERE queue = $1 AND state IN ('claimed', 'running', 'cancel_requested')`
	qQueueCounts    = `SELECT queue, state, count(*), min(run_at) FROM jobs GROUP BY queue, state ORDER BY queue, state`
	qQueuedKinds    = `SELECT queue, kind, count(*) FROM jobs WHERE state = 'queued' GROUP BY queue, kind ORDER BY queue, kind`
	qWorkerSeen     = `INSERT INTO workers (id, queues, kinds, seen_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (id) DO UPDATE SET queues = excluded.queues, kinds = excluded.kinds, seen_at = excluded.seen_at`
	qQueueTenants       = `SELECT DISTINCT tenant FROM jobs WHERE state = 'queued' AND queue = $1 LIMIT $2`
	qJobClaimableTenant = `SELECT ` + jobSelect + ` FROM jobs j
    WHERE j.state = 'queued' AND j.queue = $1 AND j.tenant = $4
      AND ($2::text[] IS NULL OR cardinality($2::text[]) = 0 OR j.kind = ANY($2::text[]))
      AND ($5::text[] IS NULL OR cardinality($5::text[]) = 0 OR j.topic ~ ANY($5::text[]))
    ORDER BY -j.priority, j.created_at, j.id -- the claim index's order
    LIMIT $3
    FOR UPDATE SKIP LOCKED`
	qWorkerList = `SELECT id, queues, kinds, seen_at FROM workers WHERE seen_at >= $1 ORDER BY id`
)

func (t *tx) QueueLimitedNames(ctx context.Context) ([]string, error) {
	return rows(ctx, t, qQueueLimitedNames, nil, pgx.RowTo[string])
}

func (t *tx) QueueGet(ctx context.Context, name string) (store.QueueSettings, bool, error) {
	q := qQueueGet
	if t.write {
		q = qQueueGetLock
	}
	got, err := rows(ctx, t, q, []any{name}, scanQueue)
	if err != nil || len(got) == 0 {
		return store.QueueSettings{}, false, err
	}
	return got[0], true, nil
}

func (t *tx) QueuePut(ctx context.Context, q store.QueueSettings) error {
	weights, err := json.Marshal(q.Weights)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, qQueuePut, q.Name, q.Paused, q.MaxRunning, q.RateLimit, int64(q.RateInterval), q.RateLog.String(), q.UpdatedAt,
		q.FairTenants, string(weights), q.KeyLimit, q.Defaults.String())
	return err
}

func (t *tx) QueueList(ctx context.Context) ([]store.QueueSettings, error) {
	return rows(ctx, t, qQueueList, nil, scanQueue)
}

func (t *tx) QueueTenants(ctx context.Context, queue string, limit int) ([]string, error) {
	return rows(ctx, t, qQueueTenants, []any{queue, limit}, pgx.RowTo[string])
}

func (t *tx) JobClaimableTenant(ctx context.Context, q store.ClaimQuery, tenant string) ([]lifecycle.Job, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	return t.jobs(ctx, qJobClaimableTenant, q.Queues[0], q.Kinds, q.Limit, tenant, topicRegexps(q.Topics))
}

func (t *tx) JobCountLeased(ctx context.Context, queue string) (int, error) {
	var n int
	err := t.queryRow(ctx, qJobCountLeased, []any{queue}, &n)
	return n, err
}

func (t *tx) QueueCounts(ctx context.Context) ([]store.QueueCount, error) {
	return rows(ctx, t, qQueueCounts, nil, func(r pgx.CollectableRow) (store.QueueCount, error) {
		var c store.QueueCount
		var state string
		err := r.Scan(&c.Queue, &state, &c.Jobs, &c.OldestRunAt)
		c.State, c.OldestRunAt = lifecycle.State(state), c.OldestRunAt.UTC()
		return c, err
	})
}

func (t *tx) QueuedKinds(ctx context.Context) ([]store.KindCount, error) {
	return rows(ctx, t, qQueuedKinds, nil, func(r pgx.CollectableRow) (store.KindCount, error) {
		var k store.KindCount
		return k, r.Scan(&k.Queue, &k.Kind, &k.Jobs)
	})
}

func (t *tx) WorkerSeen(ctx context.Context, w store.Worker) error {
	kinds := w.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	// No reply is needed: the write rides with the claim's COMMIT.
	t.pending.Queue(qWorkerSeen, w.ID, w.Queues, kinds, w.SeenAt).Exec(func(pgconn.CommandTag) error { return nil })
	return nil
}

func (t *tx) WorkerList(ctx context.Context, since time.Time) ([]store.Worker, error) {
	return rows(ctx, t, qWorkerList, []any{since}, func(r pgx.CollectableRow) (store.Worker, error) {
		var w store.Worker
		err := r.Scan(&w.ID, &w.Queues, &w.Kinds, &w.SeenAt)
		w.SeenAt = w.SeenAt.UTC()
		return w, err
	})
}

func scanQueue(r pgx.CollectableRow) (store.QueueSettings, error) {
	var q store.QueueSettings
	var interval int64
	var weights, rateLog, defaults string
	err := r.Scan(&q.Name, &q.Paused, &q.MaxRunning, &q.RateLimit, &interval, &rateLog, &q.UpdatedAt, &q.FairTenants, &weights, &q.KeyLimit, &defaults)
	if err != nil {
		return q, err
	}
	if err := json.Unmarshal([]byte(weights), &q.Weights); err != nil {
		return q, err
	}
	if q.RateLog, err = store.ParseRateLog(rateLog); err != nil {
		return q, err
	}
	if q.Defaults, err = store.ParseSpecDefaults(defaults); err != nil {
		return q, err
	}
	q.RateInterval = time.Duration(interval)
	q.UpdatedAt = q.UpdatedAt.UTC()
	return q, err
}

func (t *tx) QueueDefaults(ctx context.Context) (map[string]store.SpecDefaults, error) {
	out := map[string]store.SpecDefaults{}
	_, err := rows(ctx, t, qQueueDefaults, nil, func(r pgx.CollectableRow) (struct{}, error) {
		var name, defaults string
		if err := r.Scan(&name, &defaults); err != nil {
			return struct{}{}, err
		}
		d, err := store.ParseSpecDefaults(defaults)
		out[name] = d
		return struct{}{}, err
	})
	return out, err
}
