package bus

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// results applies bus workers' JobResults until ctx ends.
func (b *Bridge) results(ctx context.Context) {
	b.consume(ctx, b.cfg.ResultStream, nil, b.applyResults)
}

// resultKey keeps a batch's results about one job in order.
func resultKey(m jetstream.Msg) string {
	var r struct {
		ID string `json:"stint_job_id"`
	}
	_ = json.Unmarshal(m.Data(), &r)
	return r.ID
}

// Reasons a result changed nothing (the ignored metric's label).
const (
	ignoredStale    = "stale"
	ignoredTerminal = "terminal"
	ignoredInvalid  = "invalid"
	ignoredUnknown  = "unknown_job"
)

// applyResult applies one JobResult through the lifecycle, fenced on the
// token it carries, and acks it once the outcome is committed. A result
// that can never apply (stale, for a terminal job, malformed) is counted,
// logged and terminated; a store failure leaves it for redelivery.
func (b *Bridge) applyResult(ctx context.Context, msg jetstream.Msg) {
	var r JobResult
	if err := json.Unmarshal(msg.Data(), &r); err != nil {
		b.ignore(msg, r, ignoredInvalid, "the result is not a JSON JobResult: "+err.Error())
		return
	}
	if why := r.check(); why != "" {
		b.ignore(msg, r, ignoredInvalid, why)
		return
	}
	j, err := b.st.JobGet(ctx, r.StintJobID)
	switch {
	case errors.Is(err, lifecycle.ErrNotFound):
		b.ignore(msg, r, ignoredUnknown, "no job "+r.StintJobID)
		return
	case err != nil:
		b.retryLater(msg, r, err)
		return
	case r.JobID != "" && r.JobID != j.CorrelationID:
		b.ignore(msg, r, ignoredInvalid, "job_id "+r.JobID+" is not the job_id of "+r.StintJobID)
		return
	case j.State.Terminal():
		b.ignore(msg, r, ignoredTerminal, "the job is "+string(j.State)+" already; the result changes nothing")
		return
	case (r.Attempt != 0 && r.Attempt != j.Attempt) || r.LeaseID != j.LeaseID:
		b.ignore(msg, r, ignoredStale, "the token is not the job's current lease")
		return
	}
	next, err := b.apply(ctx, j, r)
	switch {
	case errors.Is(err, lifecycle.ErrStaleLease):
		b.ignore(msg, r, ignoredStale, err.Error())
	case errors.Is(err, lifecycle.ErrInvalidTransition), errors.Is(err, lifecycle.ErrValidation):
		b.ignore(msg, r, ignoredInvalid, err.Error())
	case err != nil:
		b.retryLater(msg, r, err)
	default:
		b.m.applied.WithLabelValues(string(r.Status)).Inc()
		b.settled(next, r)
		_ = msg.Ack()
	}
}

// settled updates what is out with bus workers after an applied result,
// next being the job as the result left it: an outcome frees the job's
// slot, a heartbeat extends it, and both keep the job's new record.
func (b *Bridge) settled(next lifecycle.Job, r JobResult) {
	switch r.Status {
	case StatusRunning:
		b.out.refresh(next)
	case StatusHeartbeat:
		b.out.add(next, b.cfg.Clock.Now().Add(b.cfg.LeaseTTL))
	default:
		b.out.done(next.ID)
		if next.State.Terminal() {
			b.ev.final(next)
		}
	}
}

// check says what is wrong with a bus worker's result, or "".
func (r JobResult) check() string {
	switch {
	case r.StintJobID == "" || r.LeaseID == "":
		return "stint_job_id and lease_id are required: echo them from the dispatch"
	}
	switch r.Status {
	case StatusRunning, StatusHeartbeat, StatusSucceeded, StatusFailed, StatusTimeout, StatusCancelled:
		return ""
	}
	return "status " + string(r.Status) + ": a bus worker reports RUNNING, HEARTBEAT, SUCCEEDED, FAILED, TIMEOUT or CANCELLED"
}

// apply performs the transition the result asks for, and returns the job
// as it left it. A job still claimed (DISPATCHED) is started first: a
// worker may report its outcome without ever saying RUNNING.
func (b *Bridge) apply(ctx context.Context, j lifecycle.Job, r JobResult) (lifecycle.Job, error) {
	owner := store.OwnerParams{JobID: j.ID, LeaseID: r.LeaseID}
	if j.State == lifecycle.Claimed && r.Status != StatusHeartbeat {
		started, err := b.st.JobStart(ctx, &owner)
		if err != nil {
			return j, err
		}
		j = started
	}
	var err error
	switch r.Status {
	case StatusRunning:
		return j, nil
	case StatusHeartbeat:
		return b.st.JobHeartbeat(ctx, &store.JobHeartbeatParams{OwnerParams: owner, LeaseTTL: b.cfg.LeaseTTL})
	case StatusSucceeded:
		var res []store.Result
		res, err = b.st.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: owner, Result: r.Result,
			ResultPtr: r.ResultPtr, ExecutionMS: r.ExecutionMS}})
		if err != nil {
			return j, err
		}
		return res[0].Job, res[0].Err
	case StatusCancelled:
		if j.State == lifecycle.CancelRequested {
			return b.st.JobAckCancel(ctx, &owner)
		}
		return b.st.JobFail(ctx, &store.JobFailParams{OwnerParams: owner, ExecutionMS: r.ExecutionMS,
			Error: lifecycle.JobError{Code: "cancelled", Message: orText(r.ErrorMessage, "the bus worker cancelled the job"), Class: lifecycle.ClassPermanent}})
	default: // FAILED, TIMEOUT
		return b.st.JobFail(ctx, &store.JobFailParams{OwnerParams: owner, ExecutionMS: r.ExecutionMS, Error: r.jobError()})
	}
}

// jobError is the error a FAILED or TIMEOUT result records.
func (r JobResult) jobError() lifecycle.JobError {
	e := lifecycle.JobError{Code: orText(r.ErrorCode, "failed"), Message: orText(r.ErrorMessage, "the bus worker reported FAILED"), Class: lifecycle.ClassTransient}
	if r.Status == StatusTimeout {
		e.Code, e.Class = orText(r.ErrorCode, "timeout"), lifecycle.ClassTimeout
		e.Message = orText(r.ErrorMessage, "the bus worker reported TIMEOUT")
	}
	if r.Retryable != nil && !*r.Retryable {
		e.Class = lifecycle.ClassPermanent
	}
	return e
}

// ignore counts and logs a result that changes nothing, and terminates it.
func (b *Bridge) ignore(msg jetstream.Msg, r JobResult, reason, why string) {
	b.m.ignored.WithLabelValues(reason).Inc()
	if reason == ignoredTerminal {
		b.out.done(r.StintJobID)
	}
	level := b.log.Info
	if reason == ignoredInvalid || reason == ignoredUnknown {
		level = b.log.Warn
	}
	level("bus result ignored", "reason", reason, "job_id", r.JobID, "stint_job_id", r.StintJobID, "status", r.Status, "attempt", r.Attempt, "why", why)
	_ = msg.Term()
}

// retryLater leaves a result for redelivery after a store failure.
func (b *Bridge) retryLater(msg jetstream.Msg, r JobResult, err error) {
	b.log.Warn("bus result not applied yet; it will be delivered again", "stint_job_id", r.StintJobID, "err", err)
	_ = msg.NakWithDelay(time.Second)
}

func orText(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
