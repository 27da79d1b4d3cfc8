package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

var _ store.QueueTx = (*txn)(nil)

const (
	queueColumns       = `name, paused, max_running, rate_limit, rate_interval, rate_log, updated_at, fair, weights, key_limit, defaults`
	qQueueLimitedNames = `SELECT name FROM queues WHERE paused <> 0 OR max_running > 0 OR rate_limit > 0 OR fair <> 0 OR key_limit > 0`
	qQueueGet          = `SELECT ` + queueColumns + ` FROM queues WHERE name = ?`
	qQueueList         = `SELECT ` + queueColumns + ` FROM queues ORDER BY name`
	qQueuePut          = `INSERT INTO queues (` + queueColumns + `) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
    ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, max_running = excluded.max_running,
        rate_limit = excluded.rate_limit, rate_interval = excluded.rate_interval,
        rate_log = excluded.rate_log, updated_at = excluded.updated_at,
        fair = excluded.fair, weights = excluded.weights, key_limit = excluded.key_limit, defaults = excluded.defaults`
	qQueueDefaults  = `SELECT name, defaults FROM queues WHERE defaults <> ''`
	qJobCountLeased = `SELECT count(*) FROM jobs WHERE queue = ? AND state IN ('claimed', 'running', 'cancel_requested')`
	qQueueCounts    = `SELECT queue, state, count(*), min(run_at) FROM jobs GROUP BY queue, state ORDER BY queue, state`
	qQueuedKinds    = `SELECT queue, kind, count(*) FROM jobs WHERE state = 'queued' GROUP BY queue, kind ORDER BY queue, kind`
	qWorkerSeen     = `INSERT INTO workers (id, queues, kinds, seen_at) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT (id) DO UPDATE SET queues = excluded.queues, kinds = excluded.kinds, seen_at = excluded.seen_at`
	qQueueTenants       = `SELECT DISTINCT tenant FROM jobs WHERE state = 'queued' AND queue = ?1 LIMIT ?2`
	qJobClaimableTenant = `SELECT ` + jobColumns + ` FROM jobs
    WHERE state = 'queued' AND queue = ?1 AND tenant = ?4
      AND (json_array_length(?2) = 0 OR kind IN (SELECT value FROM json_each(?2)))
      AND (json_array_length(?5) = 0 OR EXISTS (SELECT 1 FROM json_each(?5) p WHERE stint_topic_match(p.value, topic)))
    ORDER BY priority DESC, created_at, id LIMIT ?3`
	qWorkerList = `SELECT id, queues, kinds, seen_at FROM workers WHERE seen_at >= ? ORDER BY id`
)

func (t *txn) QueueLimitedNames(ctx context.Context) ([]string, error) {
	return queryAll(ctx, t, qQueueLimitedNames, func(r *sql.Rows) (string, error) {
		var s string
		return s, r.Scan(&s)
	})
}

func (t *txn) QueueGet(ctx context.Context, name string) (store.QueueSettings, bool, error) {
	q, err := scanQueue(t.q.QueryRowContext(t.stmtCtx(ctx), qQueueGet, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.QueueSettings{}, false, nil
	}
	return q, err == nil, err
}

func (t *txn) QueuePut(ctx context.Context, q store.QueueSettings) error {
	weights, err := json.Marshal(q.Weights)
	if err != nil {
		return err
	}
	_, err = t.q.ExecContext(t.stmtCtx(ctx), qQueuePut, q.Name, q.Paused, q.MaxRunning, q.RateLimit, int64(q.RateInterval),
		q.RateLog.String(), micros(q.UpdatedAt), q.FairTenants, string(weights), q.KeyLimit, q.Defaults.String())
	return err
}

func (t *txn) QueueList(ctx context.Context) ([]store.QueueSettings, error) {
	return queryAll(ctx, t, qQueueList, func(r *sql.Rows) (store.QueueSettings, error) { return scanQueue(r) })
}

func (t *txn) QueueTenants(ctx context.Context, queue string, limit int) ([]string, error) {
	return queryAll(ctx, t, qQueueTenants, func(r *sql.Rows) (string, error) {
		var s string
		return s, r.Scan(&s)
	}, queue, limit)
}

func (t *txn) JobClaimableTenant(ctx context.Context, q store.ClaimQuery, tenant string) ([]lifecycle.Job, error) {
	return t.jobs(ctx, qJobClaimableTenant, q.Queues[0], jsonList(q.Kinds), q.Limit, tenant, jsonList(q.Topics))
}

func (t *txn) JobCountLeased(ctx context.Context, queue string) (int, error) {
	var n int
	err := t.q.QueryRowContext(t.stmtCtx(ctx), qJobCountLeased, queue).Scan(&n)
	return n, err
}

func (t *txn) QueueCounts(ctx context.Context) ([]store.QueueCount, error) {
	return queryAll(ctx, t, qQueueCounts, func(r *sql.Rows) (store.QueueCount, error) {
		var c store.QueueCount
		var oldest int64
		err := r.Scan(&c.Queue, &c.State, &c.Jobs, &oldest)
		c.OldestRunAt = time.UnixMicro(oldest).UTC()
		return c, err
	})
}

func (t *txn) QueuedKinds(ctx context.Context) ([]store.KindCount, error) {
	return queryAll(ctx, t, qQueuedKinds, func(r *sql.Rows) (store.KindCount, error) {
		var k store.KindCount
		return k, r.Scan(&k.Queue, &k.Kind, &k.Jobs)
	})
}

func (t *txn) WorkerSeen(ctx context.Context, w store.Worker) error {
	queues, kinds := jsonList(w.Queues), jsonList(w.Kinds)
	_, err := t.q.ExecContext(t.stmtCtx(ctx), qWorkerSeen, w.ID, queues, kinds, micros(w.SeenAt))
	return err
}

func (t *txn) WorkerList(ctx context.Context, since time.Time) ([]store.Worker, error) {
	return queryAll(ctx, t, qWorkerList, func(r *sql.Rows) (store.Worker, error) {
		var w store.Worker
		var queues, kinds string
		var seen int64
		if err := r.Scan(&w.ID, &queues, &kinds, &seen); err != nil {
			return w, err
		}
		w.SeenAt = time.UnixMicro(seen).UTC()
		if err := json.Unmarshal([]byte(queues), &w.Queues); err != nil {
			return w, err
		}
		return w, json.Unmarshal([]byte(kinds), &w.Kinds)
	}, micros(since))
}

func scanQueue(r interface{ Scan(...any) error }) (store.QueueSettings, error) {
	var q store.QueueSettings
	var interval, updated int64
	var weights, rateLog, defaults string
	err := r.Scan(&q.Name, &q.Paused, &q.MaxRunning, &q.RateLimit, &interval, &rateLog, &updated, &q.FairTenants, &weights, &q.KeyLimit, &defaults)
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
	q.UpdatedAt = time.UnixMicro(updated).UTC()
	return q, err
}

// queryAll is collect for the statements of this file, which are not in
// the driver's cache of prepared statements.
func queryAll[T any](ctx context.Context, t *txn, query string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	return rowsOf(scan)(t.q.QueryContext(t.stmtCtx(ctx), query, args...))
}

func (t *txn) QueueDefaults(ctx context.Context) (map[string]store.SpecDefaults, error) {
	out := map[string]store.SpecDefaults{}
	_, err := queryAll(ctx, t, qQueueDefaults, func(r *sql.Rows) (struct{}, error) {
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
