package server

import (
	"context"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// HeartbeatMany renews a pool's leases that fell due together, in one call.
// The whole batch is validated first; each item is then renewed on its own
// lease (the store renews one lease per call) and answered on its own, a
// job of another tenant not_found like a missing one.
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
	for i := range params {
		res, err := h.beat(ctx, &params[i])
		if err != nil {
			if ctx.Err() != nil {
				return nil, toConnect(ctx.Err())
			}
			code, msg, kind := itemError(err)
			out.Results[i] = &stintv1.HeartbeatResult{ErrorCode: code, ErrorMessage: msg, ErrorKind: kind}
			continue
		}
		out.Results[i] = &stintv1.HeartbeatResult{Heartbeat: res}
	}
	return connect.NewResponse(out), nil
}
