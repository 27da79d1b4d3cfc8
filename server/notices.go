package server

import (
	"context"
	"github.com/stint-dev/stint/lifecycle"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Notices streams the tenant's share of the store's wake-ups and lease
// notices until the client goes away or the server stops. A worker that
// long-polls asks for the lease notices only: its claims are woken here.
func (h *worker) Notices(ctx context.Context, req *connect.Request[stintv1.NoticesRequest], stream *connect.ServerStream[stintv1.NoticesResponse]) error {
	t := principalOf(ctx).tenant
	var wake <-chan string // nil, never ready, when only leases are asked for
	if !req.Msg.LeasesOnly {
		var stopWake func()
		wake, stopWake = h.s.Wakeups()
		defer stopWake()
	}
	leases, stopLeases := h.s.LeaseNotices()
	defer stopLeases()
	if err := stream.Send(&stintv1.NoticesResponse{}); err != nil {
		return err
	}
	for {
		var msg *stintv1.NoticesResponse
		select {
		case <-ctx.Done():
			return nil
		case q := <-wake:
			if t.ownsQueue(q) {
				msg = &stintv1.NoticesResponse{Queue: t.apiQueue(q)}
			}
		case id := <-leases:
			// Another tenant's job ids are not told; reading the job is the
			// price of that, paid only when a lease changes under its owner.
			if j, err := h.s.JobGet(ctx, id); err == nil && t.owns(j) {
				msg = &stintv1.NoticesResponse{JobId: id}
			}
		}
		if msg != nil {
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
	}
}

// DeadLetter moves the owner's job to the dead-letter queue.
func (h *worker) DeadLetter(ctx context.Context, req *connect.Request[stintv1.DeadLetterRequest]) (*connect.Response[stintv1.DeadLetterResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkName("reason_code", m.ReasonCode); err != nil {
		return nil, err
	}
	if err := checkText("error_code", m.ErrorCode, MaxNameBytes); err != nil {
		return nil, err
	}
	if err := checkText("error_message", m.ErrorMessage, MaxTextBytes); err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	p := &store.JobDeadLetterParams{OwnerParams: op, ReasonCode: m.ReasonCode}
	if m.ErrorCode != "" || m.ErrorMessage != "" {
		p.Error = &lifecycle.JobError{Code: m.ErrorCode, Message: m.ErrorMessage}
	}
	j, err := h.s.JobDeadLetter(ctx, p)
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.DeadLetterResponse { return &stintv1.DeadLetterResponse{Job: j} })
}
