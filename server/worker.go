package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// worker serves WorkerService: claims and the owner calls. Each owner call
// is validated whole, then its job is checked against the caller's tenant,
// then the store applies it fenced on the lease and idempotent on the
// request id.
type worker struct{ *service }

// ownerParams validates the owner part of a call: job id, fencing token and
// request id are all required.
func ownerParams(o *stintv1.Owner) (store.OwnerParams, error) {
	if o == nil {
		return store.OwnerParams{}, invalid("owner is required: the job_id, the lease_id your claim returned, and a request_id")
	}
	for _, f := range []struct{ name, v string }{{"owner.job_id", o.JobId}, {"owner.lease_id", o.LeaseId}, {"owner.request_id", o.RequestId}} {
		if err := checkName(f.name, f.v); err != nil {
			return store.OwnerParams{}, err
		}
	}
	return store.OwnerParams{JobID: o.JobId, LeaseID: o.LeaseId, RequestID: o.RequestId}, nil
}

// own checks that the job of an owner call is the caller's tenant's: known
// when this server leased it to the tenant, read from the store otherwise.
func (h *worker) own(ctx context.Context, id string) (tenant, error) {
	p := principalOf(ctx)
	if h.owners.is(id, p.tenant.name) {
		return p.tenant, nil
	}
	_, err := h.get(ctx, p.tenant, id)
	return p.tenant, err
}

// reply converts the job an owner call returned, or its error.
func reply[R any](ctx context.Context, j store.Job, err error, wrap func(*stintv1.Job) *R) (*connect.Response[R], error) {
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(wrap(jobToProto(principalOf(ctx).tenant, j))), nil
}

// Start moves a claimed job to running.
func (h *worker) Start(ctx context.Context, req *connect.Request[stintv1.StartRequest]) (*connect.Response[stintv1.StartResponse], error) {
	op, err := ownerParams(req.Msg.Owner)
	if err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	j, err := h.s.JobStart(ctx, &op)
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.StartResponse { return &stintv1.StartResponse{Job: j} })
}

// heartbeatParams validates one heartbeat.
func (h *worker) heartbeatParams(m *stintv1.HeartbeatRequest) (store.JobHeartbeatParams, error) {
	op, err := ownerParams(m.GetOwner())
	if err != nil {
		return store.JobHeartbeatParams{}, err
	}
	ttl, err := h.leaseTTL("lease_ttl", m.LeaseTtl)
	if err != nil {
		return store.JobHeartbeatParams{}, err
	}
	progress, err := checkJSON("progress", m.Progress, h.cfg.MaxJSONBytes)
	if err != nil {
		return store.JobHeartbeatParams{}, err
	}
	if err := checkText("phase", m.Phase, MaxNameBytes); err != nil {
		return store.JobHeartbeatParams{}, err
	}
	return store.JobHeartbeatParams{OwnerParams: op, LeaseTTL: ttl, Progress: progress, Phase: m.Phase}, nil
}

// beat renews one validated heartbeat's lease for the caller's tenant.
func (h *worker) beat(ctx context.Context, hp *store.JobHeartbeatParams) (*stintv1.HeartbeatResponse, error) {
	t, err := h.own(ctx, hp.JobID)
	if err != nil {
		return nil, err
	}
	j, err := h.s.JobHeartbeat(ctx, hp)
	if err != nil {
		return nil, toConnect(err)
	}
	pj := jobToProto(t, j)
	return &stintv1.HeartbeatResponse{Job: pj, CancelRequested: j.State == lifecycle.CancelRequested, LeaseExpiresAt: pj.LeaseExpiresAt}, nil
}

// Heartbeat extends the lease and tells the owner whether to stop.
func (h *worker) Heartbeat(ctx context.Context, req *connect.Request[stintv1.HeartbeatRequest]) (*connect.Response[stintv1.HeartbeatResponse], error) {
	hp, err := h.heartbeatParams(req.Msg)
	if err != nil {
		return nil, err
	}
	res, err := h.beat(ctx, &hp)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(res), nil
}

// Checkpoint saves resumable state, progress and usage.
func (h *worker) Checkpoint(ctx context.Context, req *connect.Request[stintv1.CheckpointRequest]) (*connect.Response[stintv1.CheckpointResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	cp, err := checkJSON("checkpoint", m.Checkpoint, h.cfg.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	progress, err := checkJSON("progress", m.Progress, h.cfg.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	if err := checkText("phase", m.Phase, MaxNameBytes); err != nil {
		return nil, err
	}
	if m.Steps < 0 || m.Cost < 0 {
		return nil, invalid("steps and cost must not be negative")
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	j, err := h.s.JobCheckpoint(ctx, &store.JobCheckpointParams{OwnerParams: op, Checkpoint: cp, Progress: progress, Phase: m.Phase, Steps: m.Steps, Cost: m.Cost})
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.CheckpointResponse { return &stintv1.CheckpointResponse{Job: j} })
}

// completeParams validates one completion.
func (h *worker) completeParams(m *stintv1.CompleteRequest) (store.JobCompleteParams, error) {
	op, err := ownerParams(m.GetOwner())
	if err != nil {
		return store.JobCompleteParams{}, err
	}
	result, err := checkJSON("result", m.Result, h.cfg.MaxJSONBytes)
	if err != nil {
		return store.JobCompleteParams{}, err
	}
	if err := checkText("result_ptr", m.ResultPtr, 4<<10); err != nil {
		return store.JobCompleteParams{}, err
	}
	if m.ExecutionMs < 0 {
		return store.JobCompleteParams{}, invalid("execution_ms must not be negative")
	}
	return store.JobCompleteParams{OwnerParams: op, Result: result, ResultPtr: m.ResultPtr, ExecutionMS: m.ExecutionMs}, nil
}

// Complete records a job's result.
func (h *worker) Complete(ctx context.Context, req *connect.Request[stintv1.CompleteRequest]) (*connect.Response[stintv1.CompleteResponse], error) {
	cp, err := h.completeParams(req.Msg)
	if err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, cp.JobID); err != nil {
		return nil, err
	}
	res, err := h.completes.complete(ctx, []store.JobCompleteParams{cp})
	if err == nil {
		err = res[0].Err
	}
	var j store.Job
	if err == nil {
		j = res[0].Job
	}
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.CompleteResponse { return &stintv1.CompleteResponse{Job: j} })
}

// CompleteMany completes a batch in one transaction. The whole batch is
// validated first; each item is then fenced on its own lease, and a job of
// another tenant is answered not_found like a missing one. With omit_jobs
// an accepted item's result is empty.
func (h *worker) CompleteMany(ctx context.Context, req *connect.Request[stintv1.CompleteManyRequest]) (*connect.Response[stintv1.CompleteManyResponse], error) {
	if n := len(req.Msg.Completions); n == 0 {
		return nil, invalid("a batch takes 1 to %d completions, not %d", MaxBatch, n)
	}
	results, err := h.completeItems(ctx, req.Msg.Completions, req.Msg.OmitJobs)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stintv1.CompleteManyResponse{Results: results}), nil
}

func failedItem(err error) *stintv1.CompleteResult {
	code, msg, kind := itemError(err)
	return &stintv1.CompleteResult{ErrorCode: code, ErrorMessage: msg, ErrorKind: kind}
}

// itemError is how one refused item of a batch is told: its Connect code's
// name, the message and the store condition's kind.
func itemError(err error) (code, msg, kind string) {
	var ce *connect.Error
	if errors.As(err, &ce) {
		kind = ce.Meta().Get(ErrorKindHeader)
	}
	return connect.CodeOf(err).String(), messageOf(err), kind
}

// Fail ends the attempt with an error; retried or not by its class.
func (h *worker) Fail(ctx context.Context, req *connect.Request[stintv1.FailRequest]) (*connect.Response[stintv1.FailResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkName("error_code", m.ErrorCode); err != nil {
		return nil, err
	}
	if err := checkText("error_message", m.ErrorMessage, MaxTextBytes); err != nil {
		return nil, err
	}
	class := lifecycle.ClassTransient
	if m.ErrorClass != stintv1.ErrorClass_ERROR_CLASS_UNSPECIFIED {
		c, ok := classFromProto(m.ErrorClass)
		if !ok {
			return nil, invalid("unknown error_class %d: expected ERROR_CLASS_TRANSIENT, _PERMANENT or _TIMEOUT", m.ErrorClass)
		}
		class = c
	}
	if err := checkDuration("retry_after", m.RetryAfter); err != nil {
		return nil, err
	}
	if m.ExecutionMs < 0 {
		return nil, invalid("execution_ms must not be negative")
	}
	var backoff lifecycle.Backoff
	if b := m.Backoff; b != nil {
		if err := checkDuration("backoff.base", b.Base); err != nil {
			return nil, err
		}
		if err := checkDuration("backoff.max", b.Max); err != nil {
			return nil, err
		}
		if b.Factor < 0 || b.Factor > 100 || b.Factor != b.Factor {
			return nil, invalid("backoff.factor %v: expected 1 to 100, or 0 for the default", b.Factor)
		}
		backoff = lifecycle.Backoff{Base: b.Base.AsDuration(), Factor: b.Factor, Max: b.Max.AsDuration()}
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	j, err := h.s.JobFail(ctx, &store.JobFailParams{OwnerParams: op, ExecutionMS: m.ExecutionMs, RetryAfter: m.RetryAfter.AsDuration(),
		Backoff: backoff, Error: lifecycle.JobError{Code: m.ErrorCode, Message: m.ErrorMessage, Class: class}})
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.FailResponse { return &stintv1.FailResponse{Job: j} })
}

// Halt stops a job cleanly by policy.
func (h *worker) Halt(ctx context.Context, req *connect.Request[stintv1.HaltRequest]) (*connect.Response[stintv1.HaltResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkText("reason_code", m.ReasonCode, MaxNameBytes); err != nil {
		return nil, err
	}
	if err := checkText("reason", m.Reason, MaxTextBytes); err != nil {
		return nil, err
	}
	if m.ExecutionMs < 0 {
		return nil, invalid("execution_ms must not be negative")
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	j, err := h.s.JobHalt(ctx, &store.JobHaltParams{OwnerParams: op, ReasonCode: m.ReasonCode, Reason: m.Reason, ExecutionMS: m.ExecutionMs})
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.HaltResponse { return &stintv1.HaltResponse{Job: j} })
}

// AckCancel acknowledges a requested cancel: the job is cancelled.
func (h *worker) AckCancel(ctx context.Context, req *connect.Request[stintv1.AckCancelRequest]) (*connect.Response[stintv1.AckCancelResponse], error) {
	op, err := ownerParams(req.Msg.Owner)
	if err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	j, err := h.s.JobAckCancel(ctx, &op)
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.AckCancelResponse { return &stintv1.AckCancelResponse{Job: j} })
}

// Release gives the lease back.
func (h *worker) Release(ctx context.Context, req *connect.Request[stintv1.ReleaseRequest]) (*connect.Response[stintv1.ReleaseResponse], error) {
	m := req.Msg
	op, err := ownerParams(m.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkText("reason", m.Reason, MaxTextBytes); err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, op.JobID); err != nil {
		return nil, err
	}
	if m.Requeue {
		// The worker's abandoned long polls go first, so that the job it
		// gives back is not leased straight back to one of them.
		h.claims.Leave(h.owners.worker(op.JobID))
	}
	j, err := h.s.JobRelease(ctx, &store.JobReleaseParams{OwnerParams: op, Reason: m.Reason, Requeue: m.Requeue})
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.ReleaseResponse { return &stintv1.ReleaseResponse{Job: j} })
}
