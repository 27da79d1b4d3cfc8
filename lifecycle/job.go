package lifecycle

import (
	"bytes"
	"encoding/json"
	"time"
)

// Job is the authoritative record of one job. Fields marked "owner" are set
// only while a lease is held; result and error only in terminal states.
type Job struct {
	ID          string            `json:"id"`
	Tenant      string            `json:"tenant,omitempty"`
	Kind        string            `json:"kind"`
	Queue       string            `json:"queue"`
	Topic       string            `json:"topic,omitempty"`
	Priority    int               `json:"priority"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	ContextPtr  string            `json:"context_ptr,omitempty"`
	AdapterID   string            `json:"adapter_id,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	DedupeKey   string            `json:"dedupe_key,omitempty"`
	MaxAttempts int               `json:"max_attempts"`
	// OnExhausted is where a job goes when its retries run out: dead_lettered
	// (the default) or failed.
	OnExhausted State    `json:"on_exhausted"`
	Timeout     Duration `json:"timeout,omitempty"`
	// Deadline bounds the whole job, enqueue to terminal, across attempts.
	Deadline *time.Time `json:"deadline,omitempty"`
	// CancelGrace is how long a soft cancel waits for the owner's acknowledgement.
	CancelGrace   Duration `json:"cancel_grace,omitempty"`
	Budget        *Budget  `json:"budget,omitempty"`
	CorrelationID string   `json:"correlation_id,omitempty"`
	TraceID       string   `json:"trace_id,omitempty"`
	ParentJobID   string   `json:"parent_job_id,omitempty"`
	RunID         string   `json:"run_id,omitempty"`
	StepIndex     int      `json:"step_index,omitempty"`
	ReplayOf      string   `json:"replay_of,omitempty"`
	DependsOn     []string `json:"depends_on,omitempty"`

	State   State `json:"state"`
	Attempt int   `json:"attempt"`
	// Failures counts the attempts that ended in failure, timeout or lease
	// loss; the retry budget (max_attempts) counts these, never an attempt
	// its owner released on a graceful stop.
	Failures int   `json:"failures,omitempty"`
	Rev      int64 `json:"rev"`
	// RunAt is when the job is (or was) due: its first attempt, or its next retry.
	RunAt time.Time `json:"run_at"`

	Owner          string     `json:"owner,omitempty"`
	LeaseID        string     `json:"lease_id,omitempty"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	// TimeoutAt is when the current attempt times out (started_at + timeout).
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
	// CancelDeadline is when an unacknowledged soft cancel is forced.
	CancelDeadline *time.Time `json:"cancel_deadline,omitempty"`

	// LeaseEndedBy is who ended the last lease: the owner itself, the system
	// (expiry, timeout, budget) or a client (hard cancel). Only the owner's own
	// repeat of a transition it made is an idempotent no-op.
	LeaseEndedBy       Actor      `json:"lease_ended_by,omitempty"`
	LastOwner          string     `json:"last_owner,omitempty"`
	LastLeaseID        string     `json:"last_lease_id,omitempty"`
	LastLeaseExpiresAt *time.Time `json:"last_lease_expires_at,omitempty"`

	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Progress   json.RawMessage `json:"progress,omitempty"`
	Phase      string          `json:"phase,omitempty"`
	Usage      Usage           `json:"usage"`

	Result    json.RawMessage `json:"result,omitempty"`
	ResultPtr string          `json:"result_ptr,omitempty"`
	// ResultDigest is set once, by the transition into a terminal state: the
	// sha256 of result and result_ptr ("sha256:<hex>"), or empty when there
	// is neither. It is the job's provenance digest (LI-4).
	ResultDigest string    `json:"result_digest,omitempty"`
	Error        *JobError `json:"error,omitempty"`
	LastError    *JobError `json:"last_error,omitempty"`
	ReasonCode   string    `json:"reason_code,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	ExecutionMS  int64     `json:"execution_ms,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// AttemptStartedAt is when the current (or last) attempt started; usage
	// runtime adds up the time attempts actually ran.
	AttemptStartedAt *time.Time `json:"attempt_started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
}

// JobError is an error recorded on a job: a machine-readable code and a
// message for people.
type JobError struct {
	Code    string     `json:"code"`
	Message string     `json:"message"`
	Class   ErrorClass `json:"class,omitempty"`
	Attempt int        `json:"attempt,omitempty"`
}

// Budget bounds a job's work. Zero fields are unlimited. A job that exceeds
// its budget is halted, not failed, and keeps its last checkpoint.
type Budget struct {
	MaxRuntime Duration `json:"max_runtime,omitempty"`
	MaxSteps   int64    `json:"max_steps,omitempty"`
	MaxCost    int64    `json:"max_cost,omitempty"`
}

// Usage is what a job has consumed of its budget, reported by its owner.
type Usage struct {
	Steps int64 `json:"steps,omitempty"`
	Cost  int64 `json:"cost,omitempty"`
	// RuntimeMS is the total time spent running, across attempts.
	RuntimeMS int64 `json:"runtime_ms,omitempty"`
}

// Clone returns a deep copy of j, so a transition never aliases its input.
func (j Job) Clone() Job {
	c := j
	c.Payload = cloneRaw(j.Payload)
	c.Checkpoint = cloneRaw(j.Checkpoint)
	c.Progress = cloneRaw(j.Progress)
	c.Result = cloneRaw(j.Result)
	if j.Env != nil {
		c.Env = make(map[string]string, len(j.Env))
		for k, v := range j.Env {
			c.Env[k] = v
		}
	}
	c.DependsOn = append([]string(nil), j.DependsOn...)
	if j.DependsOn == nil {
		c.DependsOn = nil
	}
	if j.Budget != nil {
		b := *j.Budget
		c.Budget = &b
	}
	c.Error = cloneErr(j.Error)
	c.LastError = cloneErr(j.LastError)
	for _, p := range []**time.Time{&c.Deadline, &c.LeaseExpiresAt, &c.TimeoutAt, &c.CancelDeadline,
		&c.LastLeaseExpiresAt, &c.StartedAt, &c.AttemptStartedAt, &c.FinishedAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return c
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

// compactJSON returns valid JSON r without insignificant white space: the
// form the stores keep, so a digest taken here matches the stored bytes.
func compactJSON(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return cloneRaw(r) // validated elsewhere; never reached for valid input
	}
	return b.Bytes()
}

func cloneErr(e *JobError) *JobError {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("30s", "1m30s").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return Validationf("duration must be a string like \"30s\": %v", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return Validationf("bad duration %q: expected a Go duration like \"30s\" or \"1m30s\"", s)
	}
	*d = Duration(v)
	return nil
}
