package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Schedule is a periodic job kept in the store: a cron expression read in a
// time zone, and the job each tick enqueues. The store keeps it and fires
// its ticks; package cron parses the expression and decides which ticks are
// due.
type Schedule struct {
	Name string `json:"name"`
	// Expr is the cron expression (five fields, an optional leading seconds
	// field, or a descriptor such as @hourly).
	Expr string `json:"expr"`
	// TimeZone is the IANA zone the expression is read in; empty is UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Missed says which ticks missed while nothing ran are enqueued:
	// "latest" (the default: the last one once, and every one less than a
	// grace late, see cron.Due) or "all".
	Missed string `json:"missed,omitempty"`
	// The job each tick enqueues.
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue,omitempty"`
	Tenant      string          `json:"tenant,omitempty"`
	Priority    int             `json:"priority,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Timeout     time.Duration   `json:"timeout,omitempty"`
	// Paused schedules enqueue nothing; their missed ticks are skipped.
	Paused bool `json:"paused,omitempty"`
	// LastTick is the last tick enqueued (or skipped); ticks are counted
	// from it, or from CreatedAt when it is nil.
	LastTick  *time.Time `json:"last_tick,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// The policies for ticks missed while no leader ran.
const (
	MissedLatest = "latest"
	MissedAll    = "all"
)

// Spec is the job a tick of s enqueues, without its tick-specific fields.
func (s Schedule) Spec() lifecycle.Spec {
	return lifecycle.Spec{Kind: s.Kind, Queue: s.Queue, Tenant: s.Tenant, Priority: s.Priority,
		Payload: s.Payload, MaxAttempts: s.MaxAttempts, Timeout: s.Timeout}
}

// Validate checks everything but the expression (package cron checks that)
// at now.
func (s Schedule) Validate(now time.Time) error {
	if err := lifecycle.CheckName("schedule name", s.Name); err != nil {
		return err
	}
	if err := lifecycle.CheckTexts("cron expression", s.Expr, "time zone", s.TimeZone); err != nil {
		return err
	}
	switch s.Missed {
	case "", MissedLatest, MissedAll:
	default:
		return lifecycle.Validationf("missed-tick policy %q: use latest or all", s.Missed)
	}
	// The job must be one enqueue would take.
	spec := s.Spec()
	return spec.Validate(now)
}

// ScheduleTx is implemented by a driver's Tx that keeps schedules.
type ScheduleTx interface {
	// SchedulePut inserts s, or replaces the definition of the schedule with
	// its name, keeping that one's CreatedAt and LastTick.
	SchedulePut(ctx context.Context, s Schedule) error
	// ScheduleGet returns the schedule named name, locked for update where
	// the backend locks rows.
	ScheduleGet(ctx context.Context, name string) (Schedule, bool, error)
	// ScheduleList returns every schedule ordered by name.
	ScheduleList(ctx context.Context) ([]Schedule, error)
	// ScheduleDelete deletes a schedule and reports whether it existed.
	ScheduleDelete(ctx context.Context, name string) (bool, error)
	// ScheduleUpdate writes s's Paused, LastTick and UpdatedAt.
	ScheduleUpdate(ctx context.Context, s Schedule) error
}

// ScheduleStore is implemented by every Store [New] returns whose driver
// keeps schedules: periodic jobs, fired once per tick across every node.
type ScheduleStore interface {
	// SchedulePut creates or redefines a schedule (its last tick is kept).
	SchedulePut(ctx context.Context, s Schedule) (Schedule, error)
	ScheduleList(ctx context.Context) ([]Schedule, error)
	ScheduleGet(ctx context.Context, name string) (Schedule, error)
	// ScheduleDelete removes a schedule; ErrNotFound if there is none.
	ScheduleDelete(ctx context.Context, name string) error
	// SchedulePause pauses or resumes a schedule.
	SchedulePause(ctx context.Context, name string, paused bool) (Schedule, error)
	// ScheduleFire enqueues the job of a tick and records the tick, in one
	// transaction, when the schedule's last tick is still p.Prev: of two
	// callers firing the same tick, one enqueues and the other gets
	// fired=false and nothing written.
	ScheduleFire(ctx context.Context, p *ScheduleFireParams) (res EnqueueResult, fired bool, err error)
}

// ScheduleFireParams name one tick of a schedule.
type ScheduleFireParams struct {
	Name string
	// Prev is the last tick the caller saw on the schedule (nil: none).
	Prev *time.Time
	// Tick is the tick to record.
	Tick time.Time
	// Enqueue is false for a tick that is recorded but not enqueued (a
	// missed tick skipped by the policy, a paused schedule).
	Enqueue bool
	Now     *time.Time
}

// Schedules returns s's schedules, or ErrUnsupported.
func Schedules(s Store) (ScheduleStore, error) {
	if ss, ok := As[ScheduleStore](s); ok {
		return ss, nil
	}
	return nil, fmt.Errorf("schedules: %w", ErrUnsupported)
}

var _ ScheduleStore = (*engine)(nil)

// scheduleTx runs fn with the driver's ScheduleTx in a write transaction.
func (e *engine) scheduleTx(ctx context.Context, fn func(tx Tx, st ScheduleTx, b *batch) error) error {
	return e.write(ctx, func(tx Tx, b *batch) error {
		st, ok := tx.(ScheduleTx)
		if !ok {
			return fmt.Errorf("schedules: %w", ErrUnsupported)
		}
		return fn(tx, st, b)
	})
}

func (e *engine) SchedulePut(ctx context.Context, s Schedule) (Schedule, error) {
	if s.Missed == "" {
		s.Missed = MissedLatest
	}
	err := e.scheduleTx(ctx, func(tx Tx, st ScheduleTx, _ *batch) error {
		t, err := now(ctx, tx, nil)
		if err != nil {
			return err
		}
		if err := s.Validate(t); err != nil {
			return err
		}
		s.CreatedAt, s.UpdatedAt, s.LastTick = t, t, nil
		if err := st.SchedulePut(ctx, s); err != nil {
			return err
		}
		got, _, err := st.ScheduleGet(ctx, s.Name)
		s = got
		return err
	})
	return s, err
}

func (e *engine) ScheduleList(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	err := e.d.Read(ctx, func(tx Tx) error {
		st, ok := tx.(ScheduleTx)
		if !ok {
			return fmt.Errorf("schedules: %w", ErrUnsupported)
		}
		var err error
		out, err = st.ScheduleList(ctx)
		return err
	})
	return out, err
}

func (e *engine) ScheduleGet(ctx context.Context, name string) (Schedule, error) {
	var out Schedule
	err := e.d.Read(ctx, func(tx Tx) error {
		st, ok := tx.(ScheduleTx)
		if !ok {
			return fmt.Errorf("schedules: %w", ErrUnsupported)
		}
		s, found, err := st.ScheduleGet(ctx, name)
		if err == nil && !found {
			err = scheduleNotFound(name)
		}
		out = s
		return err
	})
	return out, err
}

func scheduleNotFound(name string) error {
	return fmt.Errorf("schedule %q: %w: list them with `stint cron ls`", name, ErrNotFound)
}

func (e *engine) ScheduleDelete(ctx context.Context, name string) error {
	return e.scheduleTx(ctx, func(_ Tx, st ScheduleTx, _ *batch) error {
		found, err := st.ScheduleDelete(ctx, name)
		if err == nil && !found {
			err = scheduleNotFound(name)
		}
		return err
	})
}

func (e *engine) SchedulePause(ctx context.Context, name string, paused bool) (Schedule, error) {
	var out Schedule
	err := e.scheduleTx(ctx, func(tx Tx, st ScheduleTx, _ *batch) error {
		s, found, err := st.ScheduleGet(ctx, name)
		if err != nil {
			return err
		}
		if !found {
			return scheduleNotFound(name)
		}
		if s.UpdatedAt, err = now(ctx, tx, nil); err != nil {
			return err
		}
		s.Paused = paused
		out = s
		return st.ScheduleUpdate(ctx, s)
	})
	return out, err
}

// ScheduleActor names the cron service in the events of the jobs it enqueues.
const ScheduleActor = "cron"

func (e *engine) ScheduleFire(ctx context.Context, p *ScheduleFireParams) (EnqueueResult, bool, error) {
	var res EnqueueResult
	var fired bool
	err := e.scheduleTx(ctx, func(tx Tx, st ScheduleTx, b *batch) error {
		res, fired = EnqueueResult{}, false
		s, found, err := st.ScheduleGet(ctx, p.Name)
		if err != nil {
			return err
		}
		if !found || !sameTick(s.LastTick, p.Prev) || (s.LastTick != nil && !p.Tick.After(*s.LastTick)) {
			return nil // removed, or another node fired it first
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		tick := p.Tick.UTC().Truncate(time.Microsecond)
		if p.Enqueue && !s.Paused {
			key := ScheduleTickKey(s.Name, tick)
			spec := s.Spec()
			spec.DedupeKey = key
			// The request id derives the job's id from the tick: the same
			// tick can never make a second job, even after the schedule
			// row was restored from a backup.
			out, err := e.enqueue(ctx, tx, b, &JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: ScheduleActor, RequestID: key, Now: &t})
			if err != nil {
				return err
			}
			res = out[0]
		}
		s.LastTick, s.UpdatedAt, fired = &tick, t, true
		return st.ScheduleUpdate(ctx, s)
	})
	return res, fired, err
}

func sameTick(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
