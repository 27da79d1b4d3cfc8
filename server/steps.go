package server

import (
	"context"
	"encoding/json"
	"slices"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// The step calls of WorkerService (docs/steps.md, "Over the network"):
// what stint.Step, Job.Sleep and Job.WaitSignal do in a Go pool, for a
// worker in any language. Each is validated whole, then its job is checked
// against the caller's tenant, then the store applies it fenced on the
// lease.

// stepKinds are the kinds a step record may have.
var stepKinds = []string{store.StepRun, store.StepNow, store.StepSleep, store.StepWait, store.StepSignal, store.StepChild, store.StepAwait}

// steps returns the store's StepStore, or unsupported.
func (s *service) steps() (store.StepStore, error) {
	ss, err := store.Steps(s.s)
	return ss, toConnect(err)
}

// held checks that the caller's lease is the job's current one, for the
// reads of a running attempt: only the holder reads its job's steps.
func (h *worker) held(ctx context.Context, op store.OwnerParams) (tenant, error) {
	t := principalOf(ctx).tenant
	j, err := h.get(ctx, t, op.JobID)
	if err != nil {
		return t, err
	}
	if j.LeaseID != op.LeaseID || (j.State != lifecycle.Running && j.State != lifecycle.CancelRequested) {
		return t, toConnect(&lifecycle.Error{Kind: store.ErrStaleLease, JobID: j.ID, State: j.State,
			Msg: "the lease is not the job's: another worker, or nobody, holds it now; stop working on the job"})
	}
	return t, nil
}

// GetSteps returns the recorded steps of the owner's running job.
func (h *worker) GetSteps(ctx context.Context, req *connect.Request[stintv1.GetStepsRequest]) (*connect.Response[stintv1.GetStepsResponse], error) {
	op, err := ownerParams(req.Msg.Owner)
	if err != nil {
		return nil, err
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	if _, err := h.held(ctx, op); err != nil {
		return nil, err
	}
	recs, err := ss.JobSteps(ctx, op.JobID)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.GetStepsResponse{Steps: stepsToProto(recs)}), nil
}

// GetSignal returns the signal of a name sent to the owner's running job.
func (h *worker) GetSignal(ctx context.Context, req *connect.Request[stintv1.GetSignalRequest]) (*connect.Response[stintv1.GetSignalResponse], error) {
	op, err := ownerParams(req.Msg.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkName("name", req.Msg.Name); err != nil {
		return nil, err
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	if _, err := h.held(ctx, op); err != nil {
		return nil, err
	}
	sig, found, err := ss.JobSignalGet(ctx, op.JobID, req.Msg.Name)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.GetSignalResponse{Found: found}
	if found {
		out.Signal = signalToProto(sig)
	}
	return connect.NewResponse(out), nil
}

// stepParams validates a RecordStep request.
func (h *worker) stepParams(m *stintv1.RecordStepRequest) (store.JobStepParams, error) {
	op, err := ownerParams(m.Owner)
	if err != nil {
		return store.JobStepParams{}, err
	}
	p := store.JobStepParams{OwnerParams: op, Seq: int(m.Seq), Name: m.Name, Kind: m.Kind, Status: m.Status, DurationMS: m.DurationMs}
	if err := checkStepPlace(m.Seq, m.Name); err != nil {
		return p, err
	}
	if p.Kind == "" {
		p.Kind = store.StepRun
	}
	if !slices.Contains(stepKinds, p.Kind) {
		return p, invalid("kind %q: expected one of %v (or empty for run)", m.Kind, stepKinds)
	}
	if m.DurationMs < 0 {
		return p, invalid("duration_ms must not be negative")
	}
	if m.Output != "" {
		if !json.Valid([]byte(m.Output)) {
			return p, invalid("output is not JSON text: send the step's result encoded as JSON (for example \"42\" or \"{\\\"id\\\":7}\")")
		}
		p.Output = json.RawMessage(m.Output)
	}
	switch p.Status {
	case "", store.StepOK:
		p.Status = store.StepOK
		if m.ErrorCode != "" || m.ErrorMessage != "" {
			return p, invalid("error_code and error_message go with status error, not ok")
		}
	case store.StepError:
		if err := checkName("error_code", m.ErrorCode); err != nil {
			return p, err
		}
		if err := checkText("error_message", m.ErrorMessage, MaxTextBytes); err != nil {
			return p, err
		}
		if m.Output != "" {
			return p, invalid("a step of status error records its error, not an output: leave output empty")
		}
		p.Error = &lifecycle.JobError{Code: m.ErrorCode, Message: m.ErrorMessage}
	default:
		return p, invalid("status %q: expected %s (the default) or %s", m.Status, store.StepOK, store.StepError)
	}
	return p, nil
}

// RecordStep records the next step of the owner's running job.
func (h *worker) RecordStep(ctx context.Context, req *connect.Request[stintv1.RecordStepRequest]) (*connect.Response[stintv1.RecordStepResponse], error) {
	p, err := h.stepParams(req.Msg)
	if err != nil {
		return nil, err
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	t, err := h.own(ctx, p.JobID)
	if err != nil {
		return nil, err
	}
	j, rec, err := ss.JobStepRecord(ctx, &p)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.RecordStepResponse{Job: jobToProto(t, j), Step: stepToProto(rec)}), nil
}

// suspendParams validates a Suspend request.
func (h *worker) suspendParams(ctx context.Context, m *stintv1.SuspendRequest) (store.JobSuspendParams, error) {
	op, err := ownerParams(m.Owner)
	if err != nil {
		return store.JobSuspendParams{}, err
	}
	p := store.JobSuspendParams{OwnerParams: op, Wait: store.WaitSleep, ExecutionMS: m.ExecutionMs}
	switch {
	case m.Until != nil && m.After != nil:
		return p, invalid("give until or after, not both")
	case m.Until != nil:
		if err := m.Until.CheckValid(); err != nil {
			return p, invalid("until: %v", err)
		}
		t := m.Until.AsTime()
		p.Until = &t
	case m.After != nil:
		if err := checkDuration("after", m.After); err != nil {
			return p, err
		}
		p.For = m.After.AsDuration()
	default:
		return p, invalid("until or after is required: when the job wakes if nothing wakes it earlier")
	}
	if m.ExecutionMs < 0 {
		return p, invalid("execution_ms must not be negative")
	}
	switch {
	case m.Signal != "" && m.Child != "":
		return p, invalid("give signal or child, not both: a job waits for one thing at a time")
	case m.Signal != "":
		if err := checkName("signal", m.Signal); err != nil {
			return p, err
		}
		if err := lifecycle.CheckName("signal", m.Signal); err != nil {
			return p, toConnect(err)
		}
		p.Wait = store.WaitSignal(m.Signal)
	case m.Child != "":
		// The child must be the caller's tenant's: its end is what wakes
		// the job, so another tenant's job would leak when it ended.
		if _, err := h.get(ctx, principalOf(ctx).tenant, m.Child); err != nil {
			return p, err
		}
		p.Wait = store.WaitChild(m.Child)
	}
	return p, nil
}

// Suspend gives the owner's lease back until a wake time.
func (h *worker) Suspend(ctx context.Context, req *connect.Request[stintv1.SuspendRequest]) (*connect.Response[stintv1.SuspendResponse], error) {
	p, err := h.suspendParams(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	if _, err := h.own(ctx, p.JobID); err != nil {
		return nil, err
	}
	j, err := ss.JobSuspend(ctx, &p)
	return reply(ctx, j, err, func(j *stintv1.Job) *stintv1.SuspendResponse { return &stintv1.SuspendResponse{Job: j} })
}

// checkStepPlace checks a step's place and name as a worker sends them.
func checkStepPlace(seq int32, name string) error {
	if seq < 1 {
		return invalid("seq %d: steps are numbered from 1; send the place of the step (one after the last recorded one)", seq)
	}
	return checkName("name", name)
}
