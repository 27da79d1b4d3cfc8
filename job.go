package stint

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/step"
)

// Job is one attempt of a job as its handler sees it: what to do (kind,
// payload, last checkpoint), which attempt this is, and the fencing token
// that proves ownership. Its methods report back to the store during the
// attempt (Checkpoint, Progress, Phase) and set the result. A Job is valid
// only during the Work call it was passed to; its methods are safe for
// concurrent use by the handler's goroutines.
type Job struct {
	rec lifecycle.Job // the job as claimed and started
	a   *attempt

	mu         sync.Mutex
	checkpoint json.RawMessage
	result     json.RawMessage
	resultPtr  string
	stepRun    *step.Run // the attempt's durable steps (step_api.go)
}

// ID returns the job's id.
func (j *Job) ID() string { return j.rec.ID }

// Kind returns the job's kind, the name its handler is registered under.
func (j *Job) Kind() string { return j.rec.Kind }

// Queue returns the job's queue.
func (j *Job) Queue() string { return j.rec.Queue }

// Attempt returns the number of this attempt, from 1.
func (j *Job) Attempt() int { return j.rec.Attempt }

// MaxAttempts returns how many attempts the job gets in all.
func (j *Job) MaxAttempts() int { return j.rec.MaxAttempts }

// Payload returns the job's payload as enqueued (JSON; nil if none).
func (j *Job) Payload() json.RawMessage { return j.rec.Payload }

// Decode unmarshals the payload into v. Its error is a [DeadLetter] with
// reason [ReasonParseError], since a payload that does not decode now never
// will: a handler can return it as it is.
func (j *Job) Decode(v any) error {
	if len(j.rec.Payload) == 0 {
		return DeadLetter(ReasonParseError, fmt.Errorf("job %s has no payload to decode", j.rec.ID))
	}
	if err := json.Unmarshal(j.rec.Payload, v); err != nil {
		return DeadLetter(ReasonParseError, fmt.Errorf("decode the payload of job %s: %w", j.rec.ID, err))
	}
	return nil
}

// LastCheckpoint returns the state saved by the last checkpoint of any
// attempt (nil if none): where to resume.
func (j *Job) LastCheckpoint() json.RawMessage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.checkpoint
}

// Record returns a copy of the job's full record as it was when this
// attempt started: env, tenant, priority, budget, deadline and the rest.
func (j *Job) Record() JobRecord { return j.rec.Clone() }

// Fence is a job's fencing token: the attempt and the lease it holds. A
// system the handler writes to can store it with each write and refuse
// writes carrying an older token, so a worker that lost its lease cannot
// overwrite its successor's work.
type Fence struct {
	JobID   string
	Attempt int
	// LeaseID is unique per claim; owner operations present it.
	LeaseID string
}

// String returns the token as "job-id/attempt/lease-id".
func (f Fence) String() string { return fmt.Sprintf("%s/%d/%s", f.JobID, f.Attempt, f.LeaseID) }

// Fence returns the fencing token of this attempt.
func (j *Job) Fence() Fence {
	return Fence{JobID: j.rec.ID, Attempt: j.rec.Attempt, LeaseID: j.rec.LeaseID}
}
