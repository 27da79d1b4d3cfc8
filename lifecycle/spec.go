package lifecycle

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits and defaults applied to a [Spec].
const (
	// MaxPayloadBytes is the largest payload accepted at enqueue.
	MaxPayloadBytes = 1 << 20
	// DefaultMaxAttempts is the number of attempts a job gets unless told otherwise.
	DefaultMaxAttempts = 3
	// MaxMaxAttempts bounds max_attempts.
	MaxMaxAttempts = 1000
	// DefaultQueue is the queue of a job that names none.
	DefaultQueue = "default"
	// DefaultCancelGrace is how long a soft cancel waits for acknowledgement.
	DefaultCancelGrace = 30 * time.Second
	// MaxPriority bounds priority in both directions.
	MaxPriority = 1000
	maxNameLen  = 200
)

// Named priorities (higher runs first).
const (
	PriorityCritical    = 20
	PriorityInteractive = 10
	PriorityDefault     = 0
	PriorityBatch       = -10
)

// ParsePriority reads an integer or one of the names critical, interactive,
// default and batch.
func ParsePriority(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "critical":
		return PriorityCritical, nil
	case "interactive":
		return PriorityInteractive, nil
	case "default", "":
		return PriorityDefault, nil
	case "batch":
		return PriorityBatch, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < -MaxPriority || n > MaxPriority {
		return 0, Validationf("bad priority %q: expected an integer from %d to %d, or critical, interactive, default, batch", s, -MaxPriority, MaxPriority)
	}
	return n, nil
}

// Spec is what a producer asks for at enqueue. Zero values take the defaults
// named on each field.
type Spec struct {
	Kind string // required: the handler name
	// Queue defaults to "default".
	Queue string
	// Topic is a dotted subject such as job.chat.simple; optional.
	Topic      string
	Priority   int
	Payload    json.RawMessage // valid JSON, at most MaxPayloadBytes; optional
	ContextPtr string
	AdapterID  string
	Env        map[string]string
	Tenant     string
	// DedupeKey makes enqueue return the live job with the same (tenant, key).
	DedupeKey string
	// RunAt schedules the first attempt; nil or not after now means now.
	RunAt *time.Time
	// Timeout bounds one attempt, start to finish; zero means none.
	Timeout time.Duration
	// Deadline bounds the whole job; nil means none. Must be after now.
	Deadline *time.Time
	// MaxAttempts defaults to DefaultMaxAttempts.
	MaxAttempts int
	// OnExhausted is dead_lettered (the default) or failed.
	OnExhausted State
	// CancelGrace defaults to DefaultCancelGrace.
	CancelGrace   time.Duration
	Budget        *Budget
	CorrelationID string
	TraceID       string
	ParentJobID   string
	RunID         string
	StepIndex     int
	// DependsOn lists the ids of jobs that must end first; the job starts
	// blocked. Only a run's jobs have it: RunCreate and RunAddJobs set it from
	// the names a run's jobs depend on, and a job enqueued on its own with it
	// is refused (nothing outside a run would ever unblock it).
	DependsOn []string
	ReplayOf  string
	// DenyReason, when set by an admission policy, records the job as denied.
	DenyReason string
}

// Validate checks the spec and returns an [ErrValidation] error naming the
// first field that is wrong and what is expected.
func (s *Spec) Validate(now time.Time) error {
	if err := s.validateInputs(); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(s.Kind) == "":
		return Validationf("kind is required: name the handler that runs the job")
	case len(s.Kind) > maxNameLen || len(s.Queue) > maxNameLen || len(s.Topic) > maxNameLen:
		return Validationf("kind, queue and topic are limited to %d bytes", maxNameLen)
	case len(s.DedupeKey) > 4*maxNameLen:
		return Validationf("dedupe_key is limited to %d bytes", 4*maxNameLen)
	case s.Priority < -MaxPriority || s.Priority > MaxPriority:
		return Validationf("priority %d out of range: expected %d to %d", s.Priority, -MaxPriority, MaxPriority)
	case len(s.Payload) > MaxPayloadBytes:
		return Validationf("payload is %d bytes: the limit is %d; store large inputs elsewhere and pass context_ptr", len(s.Payload), MaxPayloadBytes)
	case s.MaxAttempts < 0 || s.MaxAttempts > MaxMaxAttempts:
		return Validationf("max_attempts %d out of range: expected 1 to %d", s.MaxAttempts, MaxMaxAttempts)
	case s.Timeout < 0:
		return Validationf("timeout %s is negative", s.Timeout)
	case s.CancelGrace < 0:
		return Validationf("cancel_grace %s is negative", s.CancelGrace)
	case s.Deadline != nil && !s.Deadline.After(now):
		return Validationf("deadline %s is not in the future", s.Deadline.Format(time.RFC3339))
	case s.OnExhausted != "" && s.OnExhausted != DeadLettered && s.OnExhausted != Failed:
		return Validationf("on_exhausted %q: expected dead_lettered or failed", s.OnExhausted)
	}
	if err := CheckName("kind", s.Kind); err != nil {
		return err
	}
	if s.Queue != "" { // empty means the default queue
		if err := CheckName("queue", s.Queue); err != nil {
			return err
		}
	}
	if s.Topic != "" {
		if err := validTopic(s.Topic); err != nil {
			return err
		}
	}
	if b := s.Budget; b != nil && (b.MaxRuntime < 0 || b.MaxSteps < 0 || b.MaxCost < 0) {
		return Validationf("budget limits must not be negative")
	}
	return nil
}

// validateInputs refuses text no store keeps alike (NUL bytes, invalid
// UTF-8), JSON nested too deep and times outside years 1 to 9999: the same
// error on every backend, before anything is written.
func (s *Spec) validateInputs() error {
	err := CheckTexts("kind", s.Kind, "queue", s.Queue, "tenant", s.Tenant, "topic", s.Topic,
		"dedupe_key", s.DedupeKey, "context_ptr", s.ContextPtr, "adapter_id", s.AdapterID,
		"correlation_id", s.CorrelationID, "trace_id", s.TraceID, "parent_job_id", s.ParentJobID,
		"run_id", s.RunID, "replay_of", s.ReplayOf, "deny_reason", s.DenyReason)
	if err != nil {
		return err
	}
	for i, id := range s.DependsOn {
		if err := CheckText(describe("depends_on", i), id); err != nil {
			return err
		}
	}
	for k, v := range s.Env {
		if err := firstErr(CheckText("an env name", k), CheckText(fmt.Sprintf("env %q", k), v)); err != nil {
			return err
		}
	}
	if len(s.Payload) <= MaxPayloadBytes { // the size has its own message below
		if err := CheckJSON("payload", s.Payload); err != nil {
			return err
		}
	}
	if s.RunAt != nil {
		if err := CheckTime("run_at", *s.RunAt); err != nil {
			return err
		}
	}
	if s.Deadline != nil {
		return CheckTime("deadline", *s.Deadline)
	}
	return nil
}

func validTopic(t string) error {
	for _, tok := range strings.Split(t, ".") {
		if tok == "" || strings.ContainsAny(tok, " *>") {
			return Validationf("topic %q: expected dotted tokens like job.chat.simple, without spaces or wildcards", t)
		}
	}
	return nil
}

// New validates spec and returns the job it creates (queued, scheduled,
// blocked or denied) with its enqueued or denied event. The id is chosen by
// the caller (the store).
func New(id string, spec Spec, actorID, requestID string, now time.Time) (Step, error) {
	if id == "" {
		return Step{}, Validationf("job id is required")
	}
	if err := spec.Validate(now); err != nil {
		return Step{}, err
	}
	j := Job{
		ID: id, Tenant: spec.Tenant, Kind: spec.Kind, Queue: spec.Queue, Topic: spec.Topic,
		Priority: spec.Priority, Payload: compactJSON(spec.Payload), ContextPtr: spec.ContextPtr,
		AdapterID: spec.AdapterID, DedupeKey: spec.DedupeKey, MaxAttempts: spec.MaxAttempts,
		OnExhausted: spec.OnExhausted, Timeout: Duration(spec.Timeout), CancelGrace: Duration(spec.CancelGrace),
		CorrelationID: spec.CorrelationID, TraceID: spec.TraceID, ParentJobID: spec.ParentJobID,
		RunID: spec.RunID, StepIndex: spec.StepIndex, ReplayOf: spec.ReplayOf,
		DependsOn: append([]string(nil), spec.DependsOn...),
		RunAt:     now, CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	if len(spec.Env) > 0 {
		j.Env = make(map[string]string, len(spec.Env))
		for k, v := range spec.Env {
			j.Env[k] = v
		}
	}
	if spec.Budget != nil {
		b := *spec.Budget
		j.Budget = &b
	}
	if spec.Deadline != nil {
		d := *spec.Deadline
		j.Deadline = &d
	}
	if j.Queue == "" {
		j.Queue = DefaultQueue
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	if j.OnExhausted == "" {
		j.OnExhausted = DeadLettered
	}
	if j.CancelGrace == 0 {
		j.CancelGrace = Duration(DefaultCancelGrace)
	}
	ev := EventEnqueued
	switch {
	case spec.DenyReason != "":
		j.State, j.Reason, j.ReasonCode, ev = Denied, spec.DenyReason, "denied", EventDenied
		j.FinishedAt = &now
	case len(spec.DependsOn) > 0:
		j.State = Blocked
		if spec.RunAt != nil && spec.RunAt.After(now) {
			j.RunAt = *spec.RunAt // kept: an unblocked job is claimable from run_at on
		}
	case spec.RunAt != nil && spec.RunAt.After(now):
		j.State, j.RunAt = Scheduled, *spec.RunAt
	default:
		j.State = Queued
	}
	if err := Check(j); err != nil {
		return Step{}, fmt.Errorf("lifecycle: enqueue built an invalid job: %w", err)
	}
	e := newEvent(j, "", OpEnqueue, ActorClient, actorID, requestID, "", now)
	e.Type, e.Reason = ev, j.Reason
	runAt := j.RunAt
	e.RunAt, e.SpecDigest = &runAt, SpecDigest(j)
	return Step{Job: j, Event: &e}, nil
}
