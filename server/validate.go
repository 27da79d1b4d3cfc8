package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

// Limits on what a request may carry. Everything is checked before the
// store is called, so a refused request writes nothing.
const (
	// DefaultMaxJSONBytes bounds payloads, results, checkpoints and progress.
	DefaultMaxJSONBytes = lifecycle.MaxPayloadBytes
	// MaxJSONDepth is the deepest nesting of objects and arrays accepted.
	MaxJSONDepth = 64
	// MaxNameBytes bounds kinds, queues, topics, ids, request ids and phases.
	MaxNameBytes = 200
	// MaxTextBytes bounds error messages and reasons.
	MaxTextBytes = 64 << 10
	// MaxEnv bounds the number of env entries, and MaxEnvValueBytes each value.
	MaxEnv           = 64
	MaxEnvValueBytes = 4 << 10
	// MaxBatch bounds the items of one enqueue, claim or completion batch.
	MaxBatch = 1000
)

// checkText refuses a string that is too long, holds a NUL byte or is not UTF-8.
func checkText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return invalid("%s is %d bytes: the limit is %d", field, len(s), max)
	case !utf8.ValidString(s):
		return invalid("%s is not valid UTF-8", field)
	case strings.IndexByte(s, 0) >= 0:
		return invalid("%s contains a NUL byte", field)
	}
	return nil
}

// checkName is checkText for a name that must be present.
func checkName(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return invalid("%s is required", field)
	}
	return checkText(field, s, MaxNameBytes)
}

// checkJSON validates a JSON value from a request and returns its bytes as
// the store keeps them: depth, strings and numbers first, then the size of
// the encoding against limit. Exactly limit bytes are accepted.
func checkJSON(field string, v *structpb.Value, limit int) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if err := walkJSON(field, v, 1); err != nil {
		return nil, err
	}
	b := valueToJSON(v)
	if len(b) > limit {
		return nil, invalid("%s is %d bytes of JSON: the limit is %d bytes; store large data elsewhere and pass a pointer", field, len(b), limit)
	}
	return b, nil
}

func walkJSON(field string, v *structpb.Value, depth int) error {
	switch k := v.GetKind().(type) {
	case nil:
		return invalid("%s holds a value of no kind", field)
	case *structpb.Value_StringValue:
		return checkText(field+" string", k.StringValue, math.MaxInt)
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return invalid("%s holds a number JSON cannot represent", field)
		}
	case *structpb.Value_StructValue:
		if depth > MaxJSONDepth {
			return invalid("%s nests deeper than %d levels", field, MaxJSONDepth)
		}
		for key, e := range k.StructValue.GetFields() {
			if err := checkText(field+" key", key, math.MaxInt); err != nil {
				return err
			}
			if err := walkJSON(field, e, depth+1); err != nil {
				return err
			}
		}
	case *structpb.Value_ListValue:
		if depth > MaxJSONDepth {
			return invalid("%s nests deeper than %d levels", field, MaxJSONDepth)
		}
		for _, e := range k.ListValue.GetValues() {
			if err := walkJSON(field, e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// queueName checks a queue as the API names it: no '/', which the server
// uses to namespace tenants' queues.
func queueName(field, q string) error {
	if q == "" {
		return nil
	}
	if err := checkText(field, q, MaxNameBytes-64); err != nil {
		return err
	}
	if strings.Contains(q, "/") {
		return invalid("%s %q contains '/': queue names may not", field, q)
	}
	return nil
}

// specFromProto validates a spec from the wire and converts it for tenant t.
func specFromProto(t tenant, s *stintv1.Spec, limit int) (lifecycle.Spec, error) {
	if s == nil {
		return lifecycle.Spec{}, invalid("job spec is required")
	}
	if err := checkName("kind", s.Kind); err != nil {
		return lifecycle.Spec{}, err
	}
	if err := queueName("queue", s.Queue); err != nil {
		return lifecycle.Spec{}, err
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"topic", s.Topic, MaxNameBytes}, {"context_ptr", s.ContextPtr, 4 << 10}, {"adapter_id", s.AdapterId, MaxNameBytes},
		{"dedupe_key", s.DedupeKey, 4 * MaxNameBytes}, {"correlation_id", s.CorrelationId, MaxNameBytes},
		{"trace_id", s.TraceId, MaxNameBytes}, {"parent_job_id", s.ParentJobId, MaxNameBytes}, {"run_id", s.RunId, MaxNameBytes},
	} {
		if err := checkText(f.name, f.v, f.max); err != nil {
			return lifecycle.Spec{}, err
		}
	}
	if len(s.Env) > MaxEnv {
		return lifecycle.Spec{}, invalid("env has %d entries: the limit is %d", len(s.Env), MaxEnv)
	}
	for k, v := range s.Env {
		if err := checkName("env key", k); err != nil {
			return lifecycle.Spec{}, err
		}
		if err := checkText(fmt.Sprintf("env[%q]", k), v, MaxEnvValueBytes); err != nil {
			return lifecycle.Spec{}, err
		}
	}
	if len(s.DependsOn) > MaxBatch {
		return lifecycle.Spec{}, invalid("depends_on has %d ids: the limit is %d", len(s.DependsOn), MaxBatch)
	}
	for _, id := range s.DependsOn {
		if err := checkName("depends_on id", id); err != nil {
			return lifecycle.Spec{}, err
		}
	}
	payload, err := checkJSON("payload", structValue(s.Payload), limit)
	if err != nil {
		return lifecycle.Spec{}, err
	}
	out := lifecycle.Spec{
		Kind: s.Kind, Queue: t.storeQueue(s.Queue), Topic: s.Topic, Priority: int(s.Priority), Payload: payload,
		ContextPtr: s.ContextPtr, AdapterID: s.AdapterId, Env: s.Env, Tenant: t.store(), DedupeKey: s.DedupeKey,
		MaxAttempts: int(s.MaxAttempts), CorrelationID: s.CorrelationId, TraceID: s.TraceId,
		ParentJobID: s.ParentJobId, RunID: s.RunId, StepIndex: int(s.StepIndex), DependsOn: s.DependsOn,
	}
	if s.Queue == "" {
		out.Queue = t.storeQueue(lifecycle.DefaultQueue)
	}
	if s.OnExhausted != stintv1.JobState_JOB_STATE_UNSPECIFIED {
		st, ok := stateFromProto(s.OnExhausted)
		if !ok || (st != lifecycle.DeadLettered && st != lifecycle.Failed) {
			return lifecycle.Spec{}, invalid("on_exhausted %d: expected JOB_STATE_DEAD_LETTERED or JOB_STATE_FAILED", s.OnExhausted)
		}
		out.OnExhausted = st
	}
	if s.RunAt != nil {
		if err := s.RunAt.CheckValid(); err != nil {
			return lifecycle.Spec{}, invalid("run_at: %v", err)
		}
		at := s.RunAt.AsTime()
		out.RunAt = &at
	}
	if s.Deadline != nil {
		if err := s.Deadline.CheckValid(); err != nil {
			return lifecycle.Spec{}, invalid("deadline: %v", err)
		}
		at := s.Deadline.AsTime()
		out.Deadline = &at
	}
	for _, d := range []struct {
		name string
		v    *durationpb.Duration
	}{{"timeout", s.Timeout}, {"cancel_grace", s.CancelGrace}} {
		if err := checkDuration(d.name, d.v); err != nil {
			return lifecycle.Spec{}, err
		}
	}
	out.Timeout, out.CancelGrace = s.Timeout.AsDuration(), s.CancelGrace.AsDuration()
	if b := s.Budget; b != nil {
		if err := checkDuration("budget.max_runtime", b.MaxRuntime); err != nil {
			return lifecycle.Spec{}, err
		}
		out.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(b.MaxRuntime.AsDuration()), MaxSteps: b.MaxSteps, MaxCost: b.MaxCost}
	}
	return out, nil
}

// checkDuration refuses an out-of-range or negative duration; nil is zero.
func checkDuration(field string, d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return invalid("%s: %v", field, err)
	}
	if d.AsDuration() < 0 {
		return invalid("%s %s is negative", field, d.AsDuration())
	}
	return nil
}

func structValue(s *structpb.Struct) *structpb.Value {
	if s == nil {
		return nil
	}
	return structpb.NewStructValue(s)
}
