package lifecycle

import (
	"encoding/json"
	"time"
)

// Command asks for one operation on one job. Which fields matter depends on
// Op; the others are ignored.
type Command struct {
	Op    Op
	Actor Actor
	// ActorID names who acts: the worker id for owner ops (and claim), a user
	// or client name, or a maintenance service.
	ActorID string
	// RequestID makes the command idempotent: the same id again is a no-op.
	RequestID string
	// LeaseID is the fencing token: the lease presented by an owner op, or the
	// new lease a claim grants.
	LeaseID string
	// LeaseTTL is how long a claim or heartbeat extends the lease from now.
	LeaseTTL time.Duration

	Result    json.RawMessage // complete
	ResultPtr string          // complete
	Error     *JobError       // fail, dead_letter
	// RetryAt overrides the backoff of a retryable fail (a handler's retry-after).
	RetryAt *time.Time
	// Backoff schedules retries; the zero value means DefaultBackoff.
	Backoff Backoff
	// ReasonCode and Reason explain a halt, dead_letter, stall or cancel.
	ReasonCode string
	Reason     string

	Checkpoint json.RawMessage // checkpoint
	Progress   json.RawMessage // checkpoint, heartbeat
	Phase      string          // checkpoint, heartbeat
	UsageDelta Usage           // checkpoint: steps and cost used since the last report

	ExecutionMS int64 // complete, fail, halt: time the worker measured
	// Deadline, on time_out, says the job's overall deadline passed; otherwise
	// the attempt's timeout did.
	Deadline bool
	// CancelGrace overrides the job's cancel grace for a soft cancel.
	CancelGrace time.Duration

	// StepSeq and StepName identify the step a step command records: its
	// place in the job's order of steps (from 1) and its name.
	StepSeq  int
	StepName string
	// WakeAt is when a suspended job is due again (suspend). Reason names
	// what it waits for.
	WakeAt *time.Time
}

// Step is the outcome of an accepted command: the job after it and the event
// that records it. Event is nil when the command was an idempotent no-op, and
// then Job is the job unchanged.
type Step struct {
	Job   Job
	Event *Event
}

// Noop reports whether the command changed nothing.
func (s Step) Noop() bool { return s.Event == nil }

// DLQ reason codes.
const (
	ReasonParseError            = "parse_error"
	ReasonValidationFailed      = "validation_failed"
	ReasonDependencyUnavailable = "dependency_unavailable"
	ReasonTimeout               = "timeout"
	ReasonExhaustedRetries      = "exhausted_retries"
	ReasonLeaseExpired          = "lease_expired"
	ReasonPolicyViolation       = "policy_violation"
	ReasonInfrastructureFailure = "infrastructure_failure"
	ReasonCompensationFailed    = "compensation_failed"
)

// DLQReasons lists the valid dead-letter reason codes.
var DLQReasons = []string{
	ReasonParseError, ReasonValidationFailed, ReasonDependencyUnavailable, ReasonTimeout,
	ReasonExhaustedRetries, ReasonLeaseExpired, ReasonPolicyViolation,
	ReasonInfrastructureFailure, ReasonCompensationFailed,
}

// Other reason codes written by the lifecycle.
const (
	ReasonReleased       = "released"        // stall: the owner gave the lease back
	ReasonBudget         = "budget_exceeded" // halt: a budget limit was reached
	ReasonCancelled      = "cancelled"       // cancel by a client
	ReasonCancelDeadline = "cancel_deadline" // force_cancel: the owner never acknowledged
	ReasonDeadline       = "deadline"        // time_out: the overall deadline passed
	ReasonSuspended      = "suspended"       // suspend: the job sleeps or waits, holding no lease
)
