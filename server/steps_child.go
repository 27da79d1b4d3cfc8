package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Child steps over the API (docs/steps.md, "Child jobs over the network").
// A worker token may not enqueue (JobService) nor read any job, so the
// lease holder of a parent starts its children with StartChild, which the
// store fences on the parent's lease, and reads them with GetChild, which
// answers only the holder, and only about the job's own children.

// StartChild enqueues a child of the owner's running job as its next step.
func (h *worker) StartChild(ctx context.Context, req *connect.Request[stintv1.StartChildRequest]) (*connect.Response[stintv1.StartChildResponse], error) {
	m, p := req.Msg, principalOf(ctx)
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkStepPlace(m.Seq, m.Name); err != nil {
		return nil, err
	}
	spec, err := specFromProto(p.tenant, m.Job, h.cfg.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	t, err := h.own(ctx, op.JobID)
	if err != nil {
		return nil, err
	}
	res, err := ss.JobStepChild(ctx, &store.JobStepChildParams{OwnerParams: op, Seq: int(m.Seq), Name: m.Name, Spec: spec})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.StartChildResponse{Job: jobToProto(t, res.Parent), Step: stepToProto(res.Step),
		Child: jobToProto(t, res.Child)}), nil
}

// GetChild returns a child of the owner's running job, to its lease holder.
func (h *worker) GetChild(ctx context.Context, req *connect.Request[stintv1.GetChildRequest]) (*connect.Response[stintv1.GetChildResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkName("child_id", m.ChildId); err != nil {
		return nil, err
	}
	t, err := h.held(ctx, op)
	if err != nil {
		return nil, err
	}
	c, err := h.get(ctx, t, m.ChildId)
	if err != nil {
		return nil, err
	}
	if c.ParentJobID != op.JobID {
		return nil, toConnect(&lifecycle.Error{Kind: store.ErrNotFound, JobID: c.ID,
			Msg: fmt.Sprintf("job %s has no child of this id: await the jobs the job started with StartChild", op.JobID)})
	}
	return connect.NewResponse(&stintv1.GetChildResponse{Child: jobToProto(t, c), Result: string(c.Result)}), nil
}
