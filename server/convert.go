package server

import (
	"bytes"
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

// Enums map by name: lifecycle's "cancel_requested" is the proto's
// JOB_STATE_CANCEL_REQUESTED, so one pair of functions serves every enum and
// a value added to one side without the other maps to UNSPECIFIED, never to
// a wrong value.

// enumOf returns the number of the value named prefix+upper(name) in desc, or 0.
func enumOf(desc protoreflect.EnumDescriptor, prefix, name string) protoreflect.EnumNumber {
	if name == "" {
		return 0
	}
	v := desc.Values().ByName(protoreflect.Name(prefix + strings.ToUpper(name)))
	if v == nil {
		return 0
	}
	return v.Number()
}

// nameOf returns the lower-case name of n in desc without prefix, and false
// for UNSPECIFIED or a number desc does not define.
func nameOf(desc protoreflect.EnumDescriptor, prefix string, n protoreflect.EnumNumber) (string, bool) {
	v := desc.Values().ByNumber(n)
	if n == 0 || v == nil {
		return "", false
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), prefix)), true
}

func stateToProto(s lifecycle.State) stintv1.JobState {
	return stintv1.JobState(enumOf(stintv1.JobState(0).Descriptor(), "JOB_STATE_", string(s)))
}

func stateFromProto(s stintv1.JobState) (lifecycle.State, bool) {
	n, ok := nameOf(s.Descriptor(), "JOB_STATE_", protoreflect.EnumNumber(s))
	return lifecycle.State(n), ok
}

func actorToProto(a lifecycle.Actor) stintv1.Actor {
	return stintv1.Actor(enumOf(stintv1.Actor(0).Descriptor(), "ACTOR_", string(a)))
}

func classToProto(c lifecycle.ErrorClass) stintv1.ErrorClass {
	return stintv1.ErrorClass(enumOf(stintv1.ErrorClass(0).Descriptor(), "ERROR_CLASS_", string(c)))
}

func classFromProto(c stintv1.ErrorClass) (lifecycle.ErrorClass, bool) {
	n, ok := nameOf(c.Descriptor(), "ERROR_CLASS_", protoreflect.EnumNumber(c))
	return lifecycle.ErrorClass(n), ok
}

func eventTypeToProto(t lifecycle.EventType) stintv1.EventType {
	return stintv1.EventType(enumOf(stintv1.EventType(0).Descriptor(), "EVENT_TYPE_", string(t)))
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsPtr(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func dur(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// jsonToValue turns stored JSON into a protobuf Value; nil stays nil. The
// bytes were valid JSON when the store accepted them.
func jsonToValue(raw json.RawMessage) *structpb.Value {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	pv, err := structpb.NewValue(v)
	if err != nil {
		return nil
	}
	return pv
}

func jsonToStruct(raw json.RawMessage) *structpb.Struct {
	v := jsonToValue(raw)
	if v == nil {
		return nil
	}
	return v.GetStructValue()
}

// valueToJSON encodes v as compact JSON with sorted keys and without HTML
// escaping: the bytes the store keeps and the size limits measure.
func valueToJSON(v *structpb.Value) json.RawMessage {
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.AsInterface()); err != nil {
		return nil // unreachable: a Value always encodes (validated finite numbers)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func structToJSON(s *structpb.Struct) json.RawMessage {
	if s == nil {
		return nil
	}
	return valueToJSON(structpb.NewStructValue(s))
}

func jobErrorToProto(e *lifecycle.JobError) *stintv1.JobError {
	if e == nil {
		return nil
	}
	return &stintv1.JobError{Code: e.Code, Message: e.Message, Class: classToProto(e.Class), Attempt: int32(e.Attempt)}
}

// jobToProto converts a job for tenant t: the queue loses the tenant's
// prefix. The tenant is the job's own (empty for the default tenant, as
// local tools show it).
func jobToProto(t tenant, j lifecycle.Job) *stintv1.Job {
	p := &stintv1.Job{
		Id: j.ID, Tenant: j.Tenant, Kind: j.Kind, Queue: t.apiQueue(j.Queue), Topic: j.Topic,
		Priority: int32(j.Priority), Payload: jsonToStruct(j.Payload), ContextPtr: j.ContextPtr,
		AdapterId: j.AdapterID, Env: j.Env, DedupeKey: j.DedupeKey, MaxAttempts: int32(j.MaxAttempts),
		OnExhausted: stateToProto(j.OnExhausted), Timeout: dur(j.Timeout.D()), Deadline: tsPtr(j.Deadline),
		CancelGrace: dur(j.CancelGrace.D()), CorrelationId: j.CorrelationID, TraceId: j.TraceID,
		ParentJobId: j.ParentJobID, RunId: j.RunID, StepIndex: int32(j.StepIndex), ReplayOf: j.ReplayOf,
		DependsOn: j.DependsOn,

		State: stateToProto(j.State), Attempt: int32(j.Attempt), Failures: int32(j.Failures), Rev: j.Rev,
		RunAt: ts(j.RunAt), Owner: j.Owner, LeaseId: j.LeaseID, LeaseExpiresAt: tsPtr(j.LeaseExpiresAt),
		TimeoutAt: tsPtr(j.TimeoutAt), CancelDeadline: tsPtr(j.CancelDeadline),
		LeaseEndedBy: actorToProto(j.LeaseEndedBy), LastOwner: j.LastOwner, LastLeaseId: j.LastLeaseID,
		LastLeaseExpiresAt: tsPtr(j.LastLeaseExpiresAt),

		Checkpoint: jsonToValue(j.Checkpoint), Progress: jsonToValue(j.Progress), Phase: j.Phase,
		Usage: &stintv1.Usage{Steps: j.Usage.Steps, Cost: j.Usage.Cost, RuntimeMs: j.Usage.RuntimeMS},

		Result: jsonToValue(j.Result), ResultPtr: j.ResultPtr, ResultDigest: j.ResultDigest,
		Error: jobErrorToProto(j.Error), LastError: jobErrorToProto(j.LastError),
		ReasonCode: j.ReasonCode, Reason: j.Reason, ExecutionMs: j.ExecutionMS,

		CreatedAt: ts(j.CreatedAt), UpdatedAt: ts(j.UpdatedAt), StartedAt: tsPtr(j.StartedAt),
		AttemptStartedAt: tsPtr(j.AttemptStartedAt), FinishedAt: tsPtr(j.FinishedAt),
	}
	if b := j.Budget; b != nil {
		p.Budget = &stintv1.Budget{MaxRuntime: dur(b.MaxRuntime.D()), MaxSteps: b.MaxSteps, MaxCost: b.MaxCost}
	}
	return p
}

func eventToProto(e lifecycle.Event) *stintv1.Event {
	return &stintv1.Event{
		Id: e.ID, JobId: e.JobID, RunId: e.RunID, Type: eventTypeToProto(e.Type), Op: string(e.Op),
		FromState: stateToProto(e.FromState), ToState: stateToProto(e.ToState), At: ts(e.At),
		Actor: actorToProto(e.Actor), ActorId: e.ActorID, RequestId: e.RequestID,
		CorrelationId: e.CorrelationID, TraceId: e.TraceID, Attempt: int32(e.Attempt), Rev: e.Rev,
		LeaseId: e.LeaseID, Reason: e.Reason, Details: jsonToValue(e.Details), Version: int32(e.Version),
		RunAt: tsPtr(e.RunAt), LeaseExpiresAt: tsPtr(e.LeaseExpiresAt), SpecDigest: e.SpecDigest,
	}
}
