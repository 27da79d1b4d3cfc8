package server

import (
	"context"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// AddRunJobs adds jobs to the run of the owner's running job (a dynamic
// plan), fenced on its lease. A retry of an add that took effect gets the
// run again (the store recognizes it in the run's log).
func (h *worker) AddRunJobs(ctx context.Context, req *connect.Request[stintv1.AddRunJobsRequest]) (*connect.Response[stintv1.AddRunJobsResponse], error) {
	p, m := principalOf(ctx), req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	jobs, err := runJobsFromProto(p.tenant, m.Jobs, h.cfg.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	if _, err := h.get(ctx, p.tenant, op.JobID); err != nil {
		return nil, err
	}
	v, err := h.s.RunAddJobs(ctx, &store.RunAddJobsParams{Owner: op, Jobs: jobs})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.AddRunJobsResponse{Run: runViewToProto(v)}), nil
}
