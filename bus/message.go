package bus

import (
	"encoding/json"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// JobRequest is a request to run a job, with seed-bus's field names. The
// subject it is published on is its topic; Topic, when given, must agree.
type JobRequest struct {
	// JobID is the idempotency key: one job per job_id, ever. Required.
	JobID string `json:"job_id"`
	Topic string `json:"topic,omitempty"`
	// Priority is interactive, batch or critical; empty is the default.
	Priority    string            `json:"priority,omitempty"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	ContextPtr  string            `json:"context_ptr,omitempty"`
	AdapterID   string            `json:"adapter_id,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	ParentJobID string            `json:"parent_job_id,omitempty"`
	WorkflowID  string            `json:"workflow_id,omitempty"`
	StepIndex   int               `json:"step_index,omitempty"`
	// TimeoutMS bounds one attempt (stint's timeout); 0 is none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxAttempts overrides the bridge's and the store's default.
	MaxAttempts int `json:"max_attempts,omitempty"`
}

// JobResult is seed-bus's result message. Bus workers publish it (with the
// fencing token of the dispatch); the bridge publishes it for every state
// change of a bridged job (with State, Event and Revision) and for every
// refused request (Status FAILED or DENIED with an ErrorCode).
type JobResult struct {
	JobID        string          `json:"job_id"`
	Topic        string          `json:"topic,omitempty"`
	Status       Status          `json:"status"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultPtr    string          `json:"result_ptr,omitempty"`
	WorkerID     string          `json:"worker_id,omitempty"`
	ExecutionMS  int64           `json:"execution_ms,omitempty"`
	ErrorCode    string          `json:"error_code,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	// Retryable, on a bus worker's FAILED, says whether another attempt may
	// help; nil means yes (stint's retry policy decides).
	Retryable *bool `json:"retryable,omitempty"`

	// The fencing token: stint's job id, the attempt and its lease.
	StintJobID string `json:"stint_job_id,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	LeaseID    string `json:"lease_id,omitempty"`

	// On events: stint's own state and event type, and the job's revision
	// (each state change has its own; order by it).
	State    lifecycle.State     `json:"state,omitempty"`
	Event    lifecycle.EventType `json:"event,omitempty"`
	Revision int64               `json:"revision,omitempty"`
	At       *time.Time          `json:"at,omitempty"`
}

// Dispatch is what a bus worker receives on DispatchPrefix + topic: the job
// and its fencing token, to be echoed in every JobResult about it.
type Dispatch struct {
	JobRequest
	StintJobID string `json:"stint_job_id"`
	Attempt    int    `json:"attempt"`
	LeaseID    string `json:"lease_id"`
	// LeaseExpiresAt is when the job is taken back unless a result or a
	// heartbeat comes first.
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
}

// Status is a seed-bus job state.
type Status string

// The seed-bus states. HEARTBEAT is a bus worker's keep-alive, not a state.
const (
	StatusPending    Status = "PENDING"
	StatusScheduled  Status = "SCHEDULED"
	StatusDispatched Status = "DISPATCHED"
	StatusRunning    Status = "RUNNING"
	StatusSucceeded  Status = "SUCCEEDED"
	StatusFailed     Status = "FAILED"
	StatusCancelled  Status = "CANCELLED"
	StatusDenied     Status = "DENIED"
	StatusTimeout    Status = "TIMEOUT"
	StatusHeartbeat  Status = "HEARTBEAT"
)

// StatusOf maps a stint state to seed-bus's word for it (DESIGN §5):
// queued and the states that wait to be queued again are SCHEDULED, a
// delayed first attempt is PENDING, claimed is DISPATCHED, everything a
// lease holder works on is RUNNING, and the terminal states map one to one
// (dead_lettered is FAILED, halted is CANCELLED; State keeps the detail).
func StatusOf(s lifecycle.State) Status {
	switch s {
	case lifecycle.Scheduled, lifecycle.Blocked:
		return StatusPending
	case lifecycle.Claimed:
		return StatusDispatched
	case lifecycle.Running, lifecycle.CancelRequested:
		return StatusRunning
	case lifecycle.Succeeded:
		return StatusSucceeded
	case lifecycle.Failed, lifecycle.DeadLettered:
		return StatusFailed
	case lifecycle.Cancelled, lifecycle.Halted:
		return StatusCancelled
	case lifecycle.Denied:
		return StatusDenied
	case lifecycle.TimedOut:
		return StatusTimeout
	default: // queued, retrying, stalled
		return StatusScheduled
	}
}
