package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// AddRunJobs adds jobs to the run of the owner's running job (a dynamic
// plan), fenced on its lease. The store records no request id for it, so a
// retry is recognized by its effect: when the store refuses the jobs and
// the run's log shows this very job already added exactly these names, the
// first call took effect and its answer (the run) is returned again.
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
	j, err := h.get(ctx, p.tenant, op.JobID)
	if err != nil {
		return nil, err
	}
	v, err := h.s.RunAddJobs(ctx, &store.RunAddJobsParams{Owner: op, Jobs: jobs})
	if err != nil && errors.Is(err, store.ErrValidation) && j.RunID != "" && h.alreadyAdded(ctx, j, jobs) {
		v, err = h.s.RunGet(ctx, j.RunID)
	}
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.AddRunJobsResponse{Run: runViewToProto(v)}), nil
}

// alreadyAdded reports whether job j, under its current lease, already
// added jobs with exactly these names to its run.
func (h *worker) alreadyAdded(ctx context.Context, j store.Job, jobs []store.RunJobSpec) bool {
	names := make([]string, len(jobs))
	for i, s := range jobs {
		names[i] = s.Name
	}
	evs, err := h.s.RunEvents(ctx, j.RunID)
	if err != nil {
		return false
	}
	for _, e := range evs {
		if e.Type != lifecycle.RunEventJobsAdded || e.JobID != j.ID || e.ActorID != j.Owner {
			continue
		}
		var d struct {
			Added []string `json:"added"`
		}
		if json.Unmarshal(e.Details, &d) == nil && slices.Equal(d.Added, names) {
			return true
		}
	}
	return false
}
