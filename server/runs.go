package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// runs serves RunService: runs (DAGs of jobs) within the caller's tenant.
// A run's jobs are the tenant's jobs (its queues namespaced as in
// tenant.go), and the run row carries the tenant: another tenant's run is
// answered exactly like a run that does not exist.
type runs struct{ *service }

// ownsRun reports whether run r belongs to tenant t.
func (t tenant) ownsRun(r lifecycle.Run) bool { return r.Tenant == t.store() }

// runNotFound is the answer for a missing run and another tenant's alike.
func runNotFound(id string) error {
	return toConnect(&lifecycle.Error{Kind: store.ErrNotFound, Msg: "run " + id + ": no such run; list them with `stint runs ls`"})
}

// getRun reads run id for the caller's tenant.
func (s *service) getRun(ctx context.Context, t tenant, id string) (store.RunView, error) {
	if err := checkName("run id", id); err != nil {
		return store.RunView{}, err
	}
	v, err := s.s.RunGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !t.ownsRun(v.Run)) {
		return store.RunView{}, runNotFound(id)
	}
	return v, toConnect(err)
}

// CreateRun validates the whole run, then creates it and its jobs in one
// transaction.
func (h *runs) CreateRun(ctx context.Context, req *connect.Request[stintv1.CreateRunRequest]) (*connect.Response[stintv1.CreateRunResponse], error) {
	p, m := principalOf(ctx), req.Msg
	if err := checkText("id", m.Id, MaxNameBytes); err != nil {
		return nil, err
	}
	if err := checkText("name", m.Name, MaxNameBytes); err != nil {
		return nil, err
	}
	onFailure, err := onFailureFromProto(m.OnFailure)
	if err != nil {
		return nil, err
	}
	if err := checkDuration("timeout", m.Timeout); err != nil {
		return nil, err
	}
	jobs, err := runJobsFromProto(p.tenant, m.Jobs, h.cfg.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	v, err := h.s.RunCreate(ctx, &store.RunCreateParams{
		Run: lifecycle.RunSpec{ID: m.Id, Tenant: p.tenant.store(), Name: m.Name, OnFailure: onFailure,
			Timeout: m.Timeout.AsDuration(), ActorID: p.name},
		Jobs: jobs,
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.CreateRunResponse{Run: runViewToProto(v)}), nil
}

// GetRun reads a run with its jobs.
func (h *runs) GetRun(ctx context.Context, req *connect.Request[stintv1.GetRunRequest]) (*connect.Response[stintv1.GetRunResponse], error) {
	v, err := h.getRun(ctx, principalOf(ctx).tenant, req.Msg.Id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stintv1.GetRunResponse{Run: runViewToProto(v)}), nil
}

// ListRuns pages through the tenant's runs in id order, filling a page from
// up to ten store pages as ListJobs does.
func (h *runs) ListRuns(ctx context.Context, req *connect.Request[stintv1.ListRunsRequest]) (*connect.Response[stintv1.ListRunsResponse], error) {
	p, m := principalOf(ctx), req.Msg
	size, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	if err := checkText("page_token", m.PageToken, MaxNameBytes); err != nil {
		return nil, err
	}
	q := store.RunListParams{AfterID: m.PageToken, Limit: size}
	for _, s := range m.States {
		st, ok := runStateFromProto(s)
		if !ok {
			return nil, invalid("unknown run state %d: expected a RUN_STATE_ value other than UNSPECIFIED", s)
		}
		q.States = append(q.States, st)
	}
	runs, done, err := ownedPage(size, &q.AfterID,
		func(after string) ([]lifecycle.Run, error) { q.AfterID = after; return h.s.RunList(ctx, &q) },
		func(r lifecycle.Run) string { return r.ID }, p.tenant.ownsRun)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListRunsResponse{}
	for _, r := range runs {
		out.Runs = append(out.Runs, runToProto(r))
	}
	if !done {
		out.NextPageToken = q.AfterID
	}
	return connect.NewResponse(out), nil
}

// ListRunEvents returns a run's own transitions.
func (h *runs) ListRunEvents(ctx context.Context, req *connect.Request[stintv1.ListRunEventsRequest]) (*connect.Response[stintv1.ListRunEventsResponse], error) {
	if _, err := h.getRun(ctx, principalOf(ctx).tenant, req.Msg.RunId); err != nil {
		return nil, err
	}
	evs, err := h.s.RunEvents(ctx, req.Msg.RunId)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListRunEventsResponse{Events: make([]*stintv1.RunEvent, len(evs))}
	for i, e := range evs {
		out.Events[i] = runEventToProto(e)
	}
	return connect.NewResponse(out), nil
}

// CancelRun cancels a run two-phase; cancelling an ended run changes nothing.
func (h *runs) CancelRun(ctx context.Context, req *connect.Request[stintv1.CancelRunRequest]) (*connect.Response[stintv1.CancelRunResponse], error) {
	p, m := principalOf(ctx), req.Msg
	if err := checkText("reason", m.Reason, MaxTextBytes); err != nil {
		return nil, err
	}
	if _, err := h.getRun(ctx, p.tenant, m.Id); err != nil {
		return nil, err
	}
	v, err := h.s.RunCancel(ctx, &store.RunCancelParams{RunID: m.Id, Reason: m.Reason, ActorID: p.name})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.CancelRunResponse{Run: runViewToProto(v)}), nil
}

// RerunRun creates a new run from an ended one of the tenant's; its jobs
// keep the old jobs' queues, so they stay the tenant's.
func (h *runs) RerunRun(ctx context.Context, req *connect.Request[stintv1.RerunRunRequest]) (*connect.Response[stintv1.RerunRunResponse], error) {
	p, m := principalOf(ctx), req.Msg
	if _, err := h.getRun(ctx, p.tenant, m.Id); err != nil {
		return nil, err
	}
	v, err := h.s.RunRerun(ctx, &store.RunRerunParams{RunID: m.Id, FailedOnly: m.FailedOnly, ActorID: p.name})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.RerunRunResponse{Run: runViewToProto(v)}), nil
}
