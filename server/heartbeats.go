package server

import (
	"context"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// HeartbeatMany renews a pool's leases that fell due together. The whole
// batch is validated first; each item's job is checked against the caller's
// tenant (a job of another tenant is not_found like a missing one); the
// items that pass are renewed in one store call (store.HeartbeatManyStore:
// one transaction, each item fenced on its own lease and answered on its
// own), or one call each on a store without it.
func (h *worker) HeartbeatMany(ctx context.Context, req *connect.Request[stintv1.HeartbeatManyRequest]) (*connect.Response[stintv1.HeartbeatManyResponse], error) {
	items := req.Msg.Heartbeats
	if len(items) == 0 || len(items) > MaxBatch {
		return nil, invalid("a batch takes 1 to %d heartbeats, not %d", MaxBatch, len(items))
	}
	params := make([]store.JobHeartbeatParams, len(items))
	for i, m := range items {
		hp, err := h.heartbeatParams(m)
		if err != nil {
			return nil, invalid("heartbeat %d: %s", i, messageOf(err))
		}
		params[i] = hp
	}
	out := &stintv1.HeartbeatManyResponse{Results: make([]*stintv1.HeartbeatResult, len(items))}
	t := principalOf(ctx).tenant
	var mine []store.JobHeartbeatParams
	var at []int
	for i := range params {
		if _, err := h.own(ctx, params[i].JobID); err != nil {
			if ctx.Err() != nil {
				return nil, toConnect(ctx.Err())
			}
			out.Results[i] = failedBeat(err)
			continue
		}
		mine, at = append(mine, params[i]), append(at, i)
	}
	if len(mine) == 0 {
		return connect.NewResponse(out), nil
	}
	res, err := store.HeartbeatMany(ctx, h.s, mine)
	if err != nil {
		return nil, toConnect(err)
	}
	for k, r := range res {
		if r.Err != nil {
			out.Results[at[k]] = failedBeat(toConnect(r.Err))
			continue
		}
		pj := jobToProto(t, r.Job)
		out.Results[at[k]] = &stintv1.HeartbeatResult{Heartbeat: &stintv1.HeartbeatResponse{
			Job: pj, CancelRequested: r.Job.State == lifecycle.CancelRequested, LeaseExpiresAt: pj.LeaseExpiresAt}}
	}
	return connect.NewResponse(out), nil
}

func failedBeat(err error) *stintv1.HeartbeatResult {
	code, msg, kind := itemError(err)
	return &stintv1.HeartbeatResult{ErrorCode: code, ErrorMessage: msg, ErrorKind: kind}
}
