package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

var (
	_ store.ScheduleTx  = (*tx)(nil)
	_ store.AdmissionTx = (*tx)(nil)
)

const (
	scheduleColumns = `name, expr, time_zone, missed, kind, queue, tenant, priority, payload,
    max_attempts, timeout, paused, last_tick, created_at, updated_at`
	qSchedulePut = `INSERT INTO schedules (` + scheduleColumns + `)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, $13, $13)
    ON CONFLICT (name) DO UPDATE SET expr = excluded.expr, time_zone = excluded.time_zone,
        missed = excluded.missed, kind = excluded.kind, queue = excluded.queue, tenant = excluded.tenant,
        priority = excluded.priority, payload = excluded.payload, max_attempts = excluded.max_attempts,
        timeout = excluded.timeout, paused = excluded.paused, updated_at = excluded.updated_at`
	qScheduleGet     = `SELECT ` + scheduleColumns + ` FROM schedules WHERE name = $1`
	qScheduleGetLock = qScheduleGet + ` FOR UPDATE`
	qScheduleList    = `SELECT ` + scheduleColumns + ` FROM schedules ORDER BY name`
	qScheduleDelete  = `DELETE FROM schedules WHERE name = $1`
	qScheduleUpdate  = `UPDATE schedules SET paused = $2, last_tick = $3, updated_at = $4 WHERE name = $1`
	// The advisory lock serializes the enqueues of one tenant that count its
	// live jobs until they commit, so two of them cannot both take the last
	// place under a limit. Enqueues without a MaxLiveJobs rule never take it.
	qAdmitLock    = `SELECT pg_advisory_xact_lock(hashtextextended('stint.admit:' || $1, 0))`
	qJobCountLive = `SELECT count(*) FROM jobs WHERE tenant = $1 AND ($2 = '' OR queue = $2)
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied')`
)

func (t *tx) SchedulePut(ctx context.Context, s store.Schedule) error {
	var payload *string
	if len(s.Payload) > 0 {
		p := string(s.Payload)
		payload = &p
	}
	_, err := t.exec(ctx, qSchedulePut, s.Name, s.Expr, s.TimeZone, s.Missed, s.Kind, s.Queue, s.Tenant,
		s.Priority, payload, s.MaxAttempts, int64(s.Timeout), s.Paused, s.CreatedAt)
	if err != nil {
		return fmt.Errorf("postgres: put schedule %s: %w", s.Name, err)
	}
	return nil
}

func (t *tx) ScheduleGet(ctx context.Context, name string) (store.Schedule, bool, error) {
	q := qScheduleGet
	if t.write {
		q = qScheduleGetLock
	}
	got, err := rows(ctx, t, q, []any{name}, scanSchedule)
	if err != nil || len(got) == 0 {
		return store.Schedule{}, false, err
	}
	return got[0], true, nil
}

func (t *tx) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	return rows(ctx, t, qScheduleList, nil, scanSchedule)
}

func (t *tx) ScheduleDelete(ctx context.Context, name string) (bool, error) {
	tag, err := t.exec(ctx, qScheduleDelete, name)
	return tag.RowsAffected() > 0, err
}

func (t *tx) ScheduleUpdate(ctx context.Context, s store.Schedule) error {
	_, err := t.exec(ctx, qScheduleUpdate, s.Name, s.Paused, s.LastTick, s.UpdatedAt)
	return err
}

func (t *tx) JobCountLive(ctx context.Context, tenant, queue string) (int, error) {
	if t.write {
		if _, err := t.exec(ctx, qAdmitLock, tenant); err != nil {
			return 0, err
		}
	}
	var n int
	err := t.queryRow(ctx, qJobCountLive, []any{tenant, queue}, &n)
	return n, err
}

func scanSchedule(r pgx.CollectableRow) (store.Schedule, error) {
	var (
		s        store.Schedule
		payload  *string
		timeout  int64
		lastTick *time.Time
	)
	err := r.Scan(&s.Name, &s.Expr, &s.TimeZone, &s.Missed, &s.Kind, &s.Queue, &s.Tenant, &s.Priority, &payload,
		&s.MaxAttempts, &timeout, &s.Paused, &lastTick, &s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return store.Schedule{}, err
	}
	if payload != nil {
		s.Payload = json.RawMessage(*payload)
	}
	s.Timeout = time.Duration(timeout)
	if lastTick != nil {
		lt := lastTick.UTC()
		s.LastTick = &lt
	}
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s, nil
}
