package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/store"
)

var (
	_ store.ScheduleTx  = (*txn)(nil)
	_ store.AdmissionTx = (*txn)(nil)
)

const (
	scheduleColumns = `name, expr, time_zone, missed, kind, queue, tenant, priority, payload,
    max_attempts, timeout, paused, last_tick, created_at, updated_at`
	qSchedulePut = `INSERT INTO schedules (` + scheduleColumns + `)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL, ?13, ?13)
    ON CONFLICT (name) DO UPDATE SET expr = excluded.expr, time_zone = excluded.time_zone,
        missed = excluded.missed, kind = excluded.kind, queue = excluded.queue, tenant = excluded.tenant,
        priority = excluded.priority, payload = excluded.payload, max_attempts = excluded.max_attempts,
        timeout = excluded.timeout, paused = excluded.paused, updated_at = excluded.updated_at`
	qScheduleGet    = `SELECT ` + scheduleColumns + ` FROM schedules WHERE name = ?`
	qScheduleList   = `SELECT ` + scheduleColumns + ` FROM schedules ORDER BY name`
	qScheduleDelete = `DELETE FROM schedules WHERE name = ?`
	qScheduleUpdate = `UPDATE schedules SET paused = ?2, last_tick = ?3, updated_at = ?4 WHERE name = ?1`
	qJobCountLive   = `SELECT count(*) FROM jobs WHERE tenant = ?1 AND (?2 = '' OR queue = ?2)
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied')`
)

func (t *txn) SchedulePut(ctx context.Context, s store.Schedule) error {
	var payload any
	if len(s.Payload) > 0 {
		payload = string(s.Payload)
	}
	_, err := t.q.ExecContext(t.stmtCtx(ctx), qSchedulePut, s.Name, s.Expr, s.TimeZone, s.Missed, s.Kind, s.Queue, s.Tenant,
		s.Priority, payload, s.MaxAttempts, int64(s.Timeout), s.Paused, micros(s.CreatedAt))
	if err != nil {
		return fmt.Errorf("sqlite: put schedule %s: %w", s.Name, err)
	}
	return nil
}

func (t *txn) ScheduleGet(ctx context.Context, name string) (store.Schedule, bool, error) {
	s, err := scanSchedule(t.q.QueryRowContext(t.stmtCtx(ctx), qScheduleGet, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Schedule{}, false, nil
	}
	return s, err == nil, err
}

func (t *txn) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	rows, err := t.q.QueryContext(t.stmtCtx(ctx), qScheduleList)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (t *txn) ScheduleDelete(ctx context.Context, name string) (bool, error) {
	res, err := t.q.ExecContext(t.stmtCtx(ctx), qScheduleDelete, name)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (t *txn) ScheduleUpdate(ctx context.Context, s store.Schedule) error {
	_, err := t.q.ExecContext(t.stmtCtx(ctx), qScheduleUpdate, s.Name, s.Paused, microsPtr(s.LastTick), micros(s.UpdatedAt))
	return err
}

// JobCountLive needs no lock: SQLite runs one write transaction at a time.
func (t *txn) JobCountLive(ctx context.Context, tenant, queue string) (int, error) {
	var n int
	err := t.q.QueryRowContext(t.stmtCtx(ctx), qJobCountLive, tenant, queue).Scan(&n)
	return n, err
}

func scanSchedule(r interface{ Scan(...any) error }) (store.Schedule, error) {
	var (
		s                   store.Schedule
		payload             sql.NullString
		timeout             int64
		lastTick            sql.NullInt64
		createdAt, updateAt int64
	)
	err := r.Scan(&s.Name, &s.Expr, &s.TimeZone, &s.Missed, &s.Kind, &s.Queue, &s.Tenant, &s.Priority, &payload,
		&s.MaxAttempts, &timeout, &s.Paused, &lastTick, &createdAt, &updateAt)
	if err != nil {
		return store.Schedule{}, err
	}
	if payload.Valid {
		s.Payload = json.RawMessage(payload.String)
	}
	s.Timeout = time.Duration(timeout)
	if lastTick.Valid {
		lt := time.UnixMicro(lastTick.Int64).UTC()
		s.LastTick = &lt
	}
	s.CreatedAt, s.UpdatedAt = time.UnixMicro(createdAt).UTC(), time.UnixMicro(updateAt).UTC()
	return s, nil
}
