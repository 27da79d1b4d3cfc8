package server

import (
	"context"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/cron"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Schedules carry their job's tenant and queue as the store names them and
// live in one namespace for the whole database, like webhooks: only admins
// of the default tenant may manage them over the API.

func (h *admin) schedules(ctx context.Context) (store.ScheduleStore, error) {
	if err := wholeDatabaseFor(ctx, "schedules"); err != nil {
		return nil, err
	}
	ss, err := store.Schedules(h.s)
	if err != nil {
		return nil, toConnect(err)
	}
	return ss, nil
}

func scheduleToProto(s store.Schedule) *stintv1.Schedule {
	return &stintv1.Schedule{
		Name: s.Name, Expr: s.Expr, TimeZone: s.TimeZone, Missed: s.Missed, Kind: s.Kind, Queue: s.Queue, Tenant: s.Tenant,
		Priority: int32(s.Priority), Payload: jsonToValue(s.Payload), MaxAttempts: int32(s.MaxAttempts), Timeout: dur(s.Timeout),
		Paused: s.Paused, LastTick: tsPtr(s.LastTick), CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt),
	}
}

// scheduleFromProto checks what the wire may carry; the store validates
// the rest (names, the job) and package cron the expression.
func (h *admin) scheduleFromProto(p *stintv1.Schedule) (store.Schedule, error) {
	if p == nil {
		return store.Schedule{}, invalid("schedule is required: its name, expr and kind at least")
	}
	if p.LastTick != nil || p.CreatedAt != nil || p.UpdatedAt != nil {
		return store.Schedule{}, invalid("a schedule's last_tick, created_at and updated_at are set by the server: leave them empty")
	}
	for _, f := range []struct{ name, v string }{{"name", p.Name}, {"expr", p.Expr}, {"kind", p.Kind}} {
		if err := checkName(f.name, f.v); err != nil {
			return store.Schedule{}, err
		}
	}
	for _, f := range []struct{ name, v string }{{"time_zone", p.TimeZone}, {"missed", p.Missed}, {"queue", p.Queue}, {"tenant", p.Tenant}} {
		if err := checkText(f.name, f.v, MaxNameBytes); err != nil {
			return store.Schedule{}, err
		}
	}
	if err := checkDuration("timeout", p.Timeout); err != nil {
		return store.Schedule{}, err
	}
	payload, err := checkJSON("payload", p.Payload, h.cfg.MaxJSONBytes)
	if err != nil {
		return store.Schedule{}, err
	}
	return store.Schedule{
		Name: p.Name, Expr: p.Expr, TimeZone: p.TimeZone, Missed: p.Missed, Kind: p.Kind, Queue: p.Queue, Tenant: p.Tenant,
		Priority: int(p.Priority), Payload: payload, MaxAttempts: int(p.MaxAttempts), Timeout: p.Timeout.AsDuration(), Paused: p.Paused,
	}, nil
}

// PutSchedule creates or redefines a schedule, its expression checked by
// package cron as `stint cron add` checks it.
func (h *admin) PutSchedule(ctx context.Context, req *connect.Request[stintv1.PutScheduleRequest]) (*connect.Response[stintv1.PutScheduleResponse], error) {
	ss, err := h.schedules(ctx)
	if err != nil {
		return nil, err
	}
	s, err := h.scheduleFromProto(req.Msg.Schedule)
	if err != nil {
		return nil, err
	}
	if err := cron.Check(s); err != nil {
		return nil, toConnect(err)
	}
	got, err := ss.SchedulePut(ctx, s)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.PutScheduleResponse{Schedule: scheduleToProto(got)}), nil
}

// ListSchedules lists every schedule by name.
func (h *admin) ListSchedules(ctx context.Context, _ *connect.Request[stintv1.ListSchedulesRequest]) (*connect.Response[stintv1.ListSchedulesResponse], error) {
	ss, err := h.schedules(ctx)
	if err != nil {
		return nil, err
	}
	all, err := ss.ScheduleList(ctx)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListSchedulesResponse{}
	for _, s := range all {
		out.Schedules = append(out.Schedules, scheduleToProto(s))
	}
	return connect.NewResponse(out), nil
}

// DeleteSchedule removes a schedule; the jobs it enqueued are kept.
func (h *admin) DeleteSchedule(ctx context.Context, req *connect.Request[stintv1.DeleteScheduleRequest]) (*connect.Response[stintv1.DeleteScheduleResponse], error) {
	ss, err := h.schedules(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkName("name", req.Msg.Name); err != nil {
		return nil, err
	}
	if err := ss.ScheduleDelete(ctx, req.Msg.Name); err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.DeleteScheduleResponse{}), nil
}

// PauseSchedule pauses or resumes a schedule.
func (h *admin) PauseSchedule(ctx context.Context, req *connect.Request[stintv1.PauseScheduleRequest]) (*connect.Response[stintv1.PauseScheduleResponse], error) {
	ss, err := h.schedules(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkName("name", req.Msg.Name); err != nil {
		return nil, err
	}
	s, err := ss.SchedulePause(ctx, req.Msg.Name, req.Msg.Paused)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.PauseScheduleResponse{Schedule: scheduleToProto(s)}), nil
}
