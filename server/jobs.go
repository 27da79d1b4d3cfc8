package server

import (
	"context"

	"connectrpc.com/connect"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// jobs serves JobService: producers and operators, within their tenant.
type jobs struct{ *service }

func (h *jobs) enqueue(ctx context.Context, specs []*stintv1.Spec, requestID string) ([]*stintv1.EnqueueResponse, error) {
	p := principalOf(ctx)
	if len(specs) == 0 || len(specs) > MaxBatch {
		return nil, invalid("an enqueue takes 1 to %d jobs, not %d", MaxBatch, len(specs))
	}
	if err := checkText("request_id", requestID, MaxNameBytes); err != nil {
		return nil, err
	}
	params := &store.JobEnqueueParams{ActorID: p.name, RequestID: p.tenant.scopeRequest(requestID)}
	for i, s := range specs {
		spec, err := specFromProto(p.tenant, s, h.cfg.MaxJSONBytes)
		if err != nil {
			if len(specs) > 1 {
				return nil, invalid("job %d: %s", i, messageOf(err))
			}
			return nil, err
		}
		params.Jobs = append(params.Jobs, spec)
	}
	res, err := h.s.JobEnqueue(ctx, params)
	if err != nil {
		return nil, toConnect(err)
	}
	out := make([]*stintv1.EnqueueResponse, len(res))
	for i, r := range res {
		out[i] = &stintv1.EnqueueResponse{Job: jobToProto(p.tenant, r.Job), Existing: r.Existing}
	}
	return out, nil
}

// Enqueue creates one job.
func (h *jobs) Enqueue(ctx context.Context, req *connect.Request[stintv1.EnqueueRequest]) (*connect.Response[stintv1.EnqueueResponse], error) {
	res, err := h.enqueue(ctx, []*stintv1.Spec{req.Msg.Job}, req.Msg.RequestId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(res[0]), nil
}

// EnqueueMany creates jobs in one transaction.
func (h *jobs) EnqueueMany(ctx context.Context, req *connect.Request[stintv1.EnqueueManyRequest]) (*connect.Response[stintv1.EnqueueManyResponse], error) {
	res, err := h.enqueue(ctx, req.Msg.Jobs, req.Msg.RequestId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stintv1.EnqueueManyResponse{Results: res}), nil
}

// GetJob reads one job.
func (h *jobs) GetJob(ctx context.Context, req *connect.Request[stintv1.GetJobRequest]) (*connect.Response[stintv1.GetJobResponse], error) {
	p := principalOf(ctx)
	j, err := h.get(ctx, p.tenant, req.Msg.Id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stintv1.GetJobResponse{Job: jobToProto(p.tenant, j),
		LeaseState:   string(lifecycle.LeaseStateOf(j, h.cfg.Clock.Now())),
		FailureStage: string(lifecycle.FailureStageOf(j))}), nil
}

// ListJobs pages through the tenant's jobs in id order. The store lists
// every tenant's jobs, so a page is filled from up to ten store pages; the
// page token is the last id looked at, so the next page goes on from there.
func (h *jobs) ListJobs(ctx context.Context, req *connect.Request[stintv1.ListJobsRequest]) (*connect.Response[stintv1.ListJobsResponse], error) {
	p, m := principalOf(ctx), req.Msg
	size, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	if err := queueName("queue", m.Queue); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"kind", m.Kind}, {"page_token", m.PageToken}} {
		if err := checkText(f.name, f.v, MaxNameBytes); err != nil {
			return nil, err
		}
	}
	q := store.JobListParams{Queue: p.tenant.storeQueue(m.Queue), Kind: m.Kind, AfterID: m.PageToken, Limit: size}
	for _, s := range m.States {
		st, ok := stateFromProto(s)
		if !ok {
			return nil, invalid("unknown state %d: expected a JOB_STATE_ value other than UNSPECIFIED", s)
		}
		q.States = append(q.States, st)
	}
	jobs, done, err := ownedPage(size, &q.AfterID,
		func(after string) ([]lifecycle.Job, error) { q.AfterID = after; return h.s.JobList(ctx, &q) },
		func(j lifecycle.Job) string { return j.ID }, p.tenant.owns)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListJobsResponse{}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobToProto(p.tenant, j))
	}
	if !done {
		out.NextPageToken = q.AfterID
	}
	return connect.NewResponse(out), nil
}

// ListEvents returns a job's audit log.
func (h *jobs) ListEvents(ctx context.Context, req *connect.Request[stintv1.ListEventsRequest]) (*connect.Response[stintv1.ListEventsResponse], error) {
	p := principalOf(ctx)
	if _, err := h.get(ctx, p.tenant, req.Msg.JobId); err != nil {
		return nil, err
	}
	evs, err := h.s.JobEvents(ctx, req.Msg.JobId)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListEventsResponse{Events: make([]*stintv1.Event, len(evs))}
	for i, e := range evs {
		out.Events[i] = eventToProto(e)
	}
	return connect.NewResponse(out), nil
}

// CancelJob cancels softly or hard.
func (h *jobs) CancelJob(ctx context.Context, req *connect.Request[stintv1.CancelJobRequest]) (*connect.Response[stintv1.CancelJobResponse], error) {
	p, m := principalOf(ctx), req.Msg
	if err := checkText("reason", m.Reason, MaxTextBytes); err != nil {
		return nil, err
	}
	if err := checkText("request_id", m.RequestId, MaxNameBytes); err != nil {
		return nil, err
	}
	if _, err := h.get(ctx, p.tenant, m.Id); err != nil {
		return nil, err
	}
	j, err := h.s.JobCancel(ctx, &store.JobCancelParams{JobID: m.Id, Hard: m.Hard, Reason: m.Reason, ActorID: p.name, RequestID: m.RequestId})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.CancelJobResponse{Job: jobToProto(p.tenant, j)}), nil
}

// ReplayJob enqueues a new job repeating a dead-lettered one, in the same
// tenant and queue.
func (h *jobs) ReplayJob(ctx context.Context, req *connect.Request[stintv1.ReplayJobRequest]) (*connect.Response[stintv1.ReplayJobResponse], error) {
	p := principalOf(ctx)
	if _, err := h.get(ctx, p.tenant, req.Msg.Id); err != nil {
		return nil, err
	}
	c, err := stint.NewClient(h.s, stint.ClientConfig{ActorID: p.name})
	if err != nil {
		return nil, toConnect(err)
	}
	j, err := c.Replay(ctx, req.Msg.Id)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.ReplayJobResponse{Job: jobToProto(p.tenant, lifecycle.Job(j))}), nil
}
