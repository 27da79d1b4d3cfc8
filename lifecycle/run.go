package lifecycle

import (
	"encoding/json"
	"time"
)

// RunState is the lifecycle state of a run: a DAG of jobs (DESIGN.md section 2).
type RunState string

// The run states. A run is queued until one of its jobs is leased or ends,
// running until its rules settle it, and cancel_requested while a two-phase
// cancel waits for its jobs to end.
const (
	RunQueued          RunState = "queued"
	RunRunning         RunState = "running"
	RunCancelRequested RunState = "cancel_requested"
	RunSucceeded       RunState = "succeeded"
	RunFailed          RunState = "failed"
	RunCancelled       RunState = "cancelled"
	RunTimedOut        RunState = "timed_out"
)

// RunStates lists every run state, non-terminal first.
var RunStates = []RunState{RunQueued, RunRunning, RunCancelRequested, RunSucceeded, RunFailed, RunCancelled, RunTimedOut}

// Terminal reports whether s is a terminal run state. Only reported_at of a
// terminal run ever changes (once).
func (s RunState) Terminal() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCancelled || s == RunTimedOut
}

// Valid reports whether s is one of [RunStates].
func (s RunState) Valid() bool {
	for _, v := range RunStates {
		if s == v {
			return true
		}
	}
	return false
}

// String returns the state's name, or "∅" before creation.
func (s RunState) String() string {
	if s == "" {
		return "∅"
	}
	return string(s)
}

// FailurePolicy says what happens to a run's unrelated live jobs when a
// required job fails the run.
type FailurePolicy string

const (
	// FailCancel (the default) cancels every job of a failed run that is
	// still live: blocked and waiting jobs at once, leased ones two-phase.
	// CI runs want this: nothing more is learned by finishing a failed run.
	FailCancel FailurePolicy = "cancel"
	// FailContinue lets unrelated jobs run to their end; only the failed
	// job's dependents are cancelled (upstream_failed).
	FailContinue FailurePolicy = "continue"
)

// Run reason codes, on run events and on the jobs the run engine changes.
const (
	ReasonUpstreamFailed = "upstream_failed" // a job: a dependency ended without success
	ReasonPlanFailed     = "plan_failed"     // a run: its planner job failed
	ReasonJobFailed      = "job_failed"      // a run: a required job failed
	ReasonRunFailed      = "run_failed"      // a job: cancelled because its run failed
	ReasonRunCancelled   = "run_cancelled"   // a job: cancelled with its run
	ReasonRunTimeout     = "run_timeout"     // a run: its timeout passed
)

// Run is one run row: the state of a workflow, apart from its jobs.
type Run struct {
	ID        string        `json:"id"`
	Tenant    string        `json:"tenant,omitempty"`
	Name      string        `json:"name,omitempty"`
	State     RunState      `json:"state"`
	Rev       int64         `json:"rev"`
	OnFailure FailurePolicy `json:"on_failure"`
	// Timeout bounds the whole run from creation; TimeoutAt is when it ends.
	Timeout   Duration   `json:"timeout,omitempty"`
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
	// RerunOf links a rerun to the run it repeats.
	RerunOf    string     `json:"rerun_of,omitempty"`
	ReasonCode string     `json:"reason_code,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// ReportedAt is set once the run's final status was delivered through
	// the outbox (seed-ci REPORTED).
	ReportedAt *time.Time `json:"reported_at,omitempty"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// RunOp is an operation on a run.
type RunOp string

// The operations of the run transition table.
const (
	RunOpCreate  RunOp = "create"
	RunOpStart   RunOp = "start"
	RunOpExtend  RunOp = "extend" // a running job added jobs (dynamic plan)
	RunOpSucceed RunOp = "succeed"
	RunOpFail    RunOp = "fail"
	RunOpCancel  RunOp = "cancel"
	RunOpFinish  RunOp = "finish_cancel"
	RunOpTimeOut RunOp = "time_out"
	RunOpReport  RunOp = "report"
)

// RunEventType is the type of a run event.
type RunEventType string

// The run event types.
const (
	RunEventCreated         RunEventType = "run_created"
	RunEventStarted         RunEventType = "run_started"
	RunEventJobsAdded       RunEventType = "run_jobs_added"
	RunEventSucceeded       RunEventType = "run_succeeded"
	RunEventFailed          RunEventType = "run_failed"
	RunEventCancelRequested RunEventType = "run_cancel_requested"
	RunEventCancelled       RunEventType = "run_cancelled"
	RunEventTimedOut        RunEventType = "run_timed_out"
	RunEventReported        RunEventType = "run_reported"
)

// RunEvent is one entry of a run's append-only log, written in the same
// transaction as the run's change.
type RunEvent struct {
	ID         int64           `json:"id"`
	RunID      string          `json:"run_id"`
	Rev        int64           `json:"rev"`
	Type       RunEventType    `json:"type"`
	Op         RunOp           `json:"op"`
	FromState  RunState        `json:"from_state"`
	ToState    RunState        `json:"to_state"`
	At         time.Time       `json:"at"`
	Actor      Actor           `json:"actor"`
	ActorID    string          `json:"actor_id,omitempty"`
	JobID      string          `json:"job_id,omitempty"` // the job whose transition caused it
	ReasonCode string          `json:"reason_code,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
}
