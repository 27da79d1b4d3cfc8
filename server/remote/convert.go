package remote

import (
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

// Enums map by name, as on the server: JOB_STATE_CANCEL_REQUESTED is
// lifecycle's "cancel_requested".

func enumName(desc protoreflect.EnumDescriptor, prefix string, n protoreflect.EnumNumber) string {
	v := desc.Values().ByNumber(n)
	if n == 0 || v == nil {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), prefix))
}

func enumNumber(desc protoreflect.EnumDescriptor, prefix, name string) protoreflect.EnumNumber {
	if v := desc.Values().ByName(protoreflect.Name(prefix + strings.ToUpper(name))); v != nil && name != "" {
		return v.Number()
	}
	return 0
}

func state(s stintv1.JobState) lifecycle.State {
	return lifecycle.State(enumName(s.Descriptor(), "JOB_STATE_", protoreflect.EnumNumber(s)))
}

func stateProto(s lifecycle.State) stintv1.JobState {
	return stintv1.JobState(enumNumber(stintv1.JobState(0).Descriptor(), "JOB_STATE_", string(s)))
}

func actor(a stintv1.Actor) lifecycle.Actor {
	return lifecycle.Actor(enumName(a.Descriptor(), "ACTOR_", protoreflect.EnumNumber(a)))
}

func classProto(c lifecycle.ErrorClass) stintv1.ErrorClass {
	return stintv1.ErrorClass(enumNumber(stintv1.ErrorClass(0).Descriptor(), "ERROR_CLASS_", string(c)))
}

func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func timePtr(t *timestamppb.Timestamp) *time.Time {
	if t == nil {
		return nil
	}
	v := t.AsTime()
	return &v
}

func tsOf(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func durOf(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// rawOf encodes a protobuf JSON value as JSON bytes; nil stays nil.
func rawOf(v *structpb.Value) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v.AsInterface())
	if err != nil {
		return nil
	}
	return b
}

// valueOf decodes JSON bytes into a protobuf value; invalid JSON is refused
// as the local store would refuse it.
func valueOf(field string, raw json.RawMessage) (*structpb.Value, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, lifecycle.Validationf("%s is not valid JSON: %v", field, err)
	}
	pv, err := structpb.NewValue(v)
	if err != nil {
		return nil, lifecycle.Validationf("%s: %v", field, err)
	}
	return pv, nil
}

func jobError(e *stintv1.JobError) *lifecycle.JobError {
	if e == nil {
		return nil
	}
	return &lifecycle.JobError{Code: e.Code, Message: e.Message, Attempt: int(e.Attempt),
		Class: lifecycle.ErrorClass(enumName(e.Class.Descriptor(), "ERROR_CLASS_", protoreflect.EnumNumber(e.Class)))}
}

// job converts a job from the wire. The tenant and queue are as the server
// shows them to this token's tenant.
func job(p *stintv1.Job) lifecycle.Job {
	if p == nil {
		return lifecycle.Job{}
	}
	j := lifecycle.Job{
		ID: p.Id, Tenant: p.Tenant, Kind: p.Kind, Queue: p.Queue, Topic: p.Topic, Priority: int(p.Priority),
		Payload: rawOf(structValue(p.Payload)), ContextPtr: p.ContextPtr, AdapterID: p.AdapterId, Env: p.Env,
		DedupeKey: p.DedupeKey, MaxAttempts: int(p.MaxAttempts), OnExhausted: state(p.OnExhausted),
		Timeout: lifecycle.Duration(p.Timeout.AsDuration()), Deadline: timePtr(p.Deadline),
		CancelGrace: lifecycle.Duration(p.CancelGrace.AsDuration()), CorrelationID: p.CorrelationId,
		TraceID: p.TraceId, ParentJobID: p.ParentJobId, RunID: p.RunId, StepIndex: int(p.StepIndex),
		ReplayOf: p.ReplayOf, DependsOn: p.DependsOn,

		State: state(p.State), Attempt: int(p.Attempt), Failures: int(p.Failures), Rev: p.Rev, RunAt: timeOf(p.RunAt),
		Owner: p.Owner, LeaseID: p.LeaseId, LeaseExpiresAt: timePtr(p.LeaseExpiresAt), TimeoutAt: timePtr(p.TimeoutAt),
		CancelDeadline: timePtr(p.CancelDeadline), LeaseEndedBy: actor(p.LeaseEndedBy), LastOwner: p.LastOwner,
		LastLeaseID: p.LastLeaseId, LastLeaseExpiresAt: timePtr(p.LastLeaseExpiresAt),

		Checkpoint: rawOf(p.Checkpoint), Progress: rawOf(p.Progress), Phase: p.Phase,
		Result: rawOf(p.Result), ResultPtr: p.ResultPtr, ResultDigest: p.ResultDigest,
		Error: jobError(p.Error), LastError: jobError(p.LastError), ReasonCode: p.ReasonCode, Reason: p.Reason,
		ExecutionMS: p.ExecutionMs,

		CreatedAt: timeOf(p.CreatedAt), UpdatedAt: timeOf(p.UpdatedAt), StartedAt: timePtr(p.StartedAt),
		AttemptStartedAt: timePtr(p.AttemptStartedAt), FinishedAt: timePtr(p.FinishedAt),
	}
	if u := p.Usage; u != nil {
		j.Usage = lifecycle.Usage{Steps: u.Steps, Cost: u.Cost, RuntimeMS: u.RuntimeMs}
	}
	if b := p.Budget; b != nil {
		j.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(b.MaxRuntime.AsDuration()), MaxSteps: b.MaxSteps, MaxCost: b.MaxCost}
	}
	return j
}

func structValue(s *structpb.Struct) *structpb.Value {
	if s == nil {
		return nil
	}
	return structpb.NewStructValue(s)
}

func event(p *stintv1.Event) lifecycle.Event {
	return lifecycle.Event{
		ID: p.Id, JobID: p.JobId, RunID: p.RunId, Op: lifecycle.Op(p.Op),
		Type:      lifecycle.EventType(enumName(p.Type.Descriptor(), "EVENT_TYPE_", protoreflect.EnumNumber(p.Type))),
		FromState: state(p.FromState), ToState: state(p.ToState), At: timeOf(p.At), Actor: actor(p.Actor),
		ActorID: p.ActorId, RequestID: p.RequestId, CorrelationID: p.CorrelationId, TraceID: p.TraceId,
		Attempt: int(p.Attempt), Rev: p.Rev, LeaseID: p.LeaseId, Reason: p.Reason, Details: rawOf(p.Details),
		Version: int(p.Version), RunAt: timePtr(p.RunAt), LeaseExpiresAt: timePtr(p.LeaseExpiresAt), SpecDigest: p.SpecDigest,
	}
}

// spec converts a spec for the wire. The tenant is the token's: a spec
// naming any other than Options.Tenant is refused rather than silently moved.
func spec(s lifecycle.Spec, tenant string) (*stintv1.Spec, error) {
	if s.Tenant != "" && s.Tenant != tenant {
		return nil, lifecycle.Validationf("spec names tenant %q, but over a server the tenant is the token's: leave Tenant empty", s.Tenant)
	}
	if s.DenyReason != "" || s.ReplayOf != "" {
		return nil, lifecycle.Validationf("deny_reason and replay_of are set by the server, not by a remote producer")
	}
	payload, err := valueOf("payload", s.Payload)
	if err != nil {
		return nil, err
	}
	p := &stintv1.Spec{
		Kind: s.Kind, Queue: s.Queue, Topic: s.Topic, Priority: int32(s.Priority), ContextPtr: s.ContextPtr,
		AdapterId: s.AdapterID, Env: s.Env, DedupeKey: s.DedupeKey, RunAt: tsOf(s.RunAt), Timeout: durOf(s.Timeout),
		Deadline: tsOf(s.Deadline), MaxAttempts: int32(s.MaxAttempts), OnExhausted: stateProto(s.OnExhausted),
		CancelGrace: durOf(s.CancelGrace), CorrelationId: s.CorrelationID, TraceId: s.TraceID,
		ParentJobId: s.ParentJobID, RunId: s.RunID, StepIndex: int32(s.StepIndex), DependsOn: s.DependsOn,
	}
	if payload != nil {
		if p.Payload = payload.GetStructValue(); p.Payload == nil {
			return nil, lifecycle.Validationf("payload must be a JSON object over a server")
		}
	}
	if b := s.Budget; b != nil {
		p.Budget = &stintv1.Budget{MaxRuntime: durOf(b.MaxRuntime.D()), MaxSteps: b.MaxSteps, MaxCost: b.MaxCost}
	}
	return p, nil
}
