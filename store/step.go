package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// A job's handler can be a program of named, ordered steps (DESIGN.md §8,
// docs/steps.md). The store keeps one record per (job, seq), written by the
// lease holder of the running attempt in the same transaction as its
// step_recorded event, and the signals sent to a job. The step engine (the
// step package) sits above this contract.

// Step kinds: what a step record holds.
const (
	StepRun    = "run"    // the result of a function the handler ran once
	StepNow    = "now"    // a time read by the handler
	StepSleep  = "sleep"  // a durable sleep: its output says until when
	StepWait   = "wait"   // the start of a wait for a signal: its output says until when
	StepSignal = "signal" // the end of a wait: the signal's payload, or that it timed out
	StepChild  = "child"  // a child job the handler started
	StepAwait  = "await"  // the outcome of a child job the handler awaited
)

// Step statuses.
const (
	StepOK    = "ok"    // the step returned a result (Output)
	StepError = "error" // the step's error is its recorded result (on_error continue)
)

// MaxStepBytes bounds a step's recorded output and error together.
const MaxStepBytes = 256 << 10

// StepRecord is one recorded step of a job.
type StepRecord struct {
	JobID string `json:"job_id"`
	// Seq is the step's place in the job's order, from 1.
	Seq  int    `json:"seq"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Attempt and LeaseID are those of the attempt that recorded it.
	Attempt int    `json:"attempt"`
	LeaseID string `json:"lease_id"`
	Status  string `json:"status"`
	// Output is the step's JSON result; Error its error when Status is error.
	Output json.RawMessage     `json:"output,omitempty"`
	Error  *lifecycle.JobError `json:"error,omitempty"`
	// DurationMS is how long the step's function ran, by the worker's clock.
	DurationMS int64 `json:"duration_ms"`
	// RecordedAt is the time of the transaction that recorded it, on the
	// store's clock.
	RecordedAt time.Time `json:"recorded_at"`
}

// Size is the step's recorded bytes: its output and its error.
func (r StepRecord) Size() int {
	n := len(r.Output)
	if r.Error != nil {
		n += len(r.Error.Code) + len(r.Error.Message)
	}
	return n
}

// Signal is a named signal sent to a job. The first one of a name wins and
// is kept; later ones of the same name are refused.
type Signal struct {
	JobID   string          `json:"job_id"`
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload,omitempty"`
	ActorID string          `json:"actor_id,omitempty"`
	SentAt  time.Time       `json:"sent_at"`
}

// StepTx is implemented by a driver's Tx that keeps step records and signals.
type StepTx interface {
	// StepInsert appends a step record.
	StepInsert(ctx context.Context, r StepRecord) error
	// StepList returns the step records of the given jobs by job, then seq.
	StepList(ctx context.Context, jobIDs []string) ([]StepRecord, error)
	// StepLast returns the record with the highest seq of a job, if any.
	StepLast(ctx context.Context, jobID string) (StepRecord, bool, error)
	// SignalInsert keeps a signal unless one of its name was sent to the
	// job before; it reports whether it was kept.
	SignalInsert(ctx context.Context, s Signal) (bool, error)
	// SignalGet returns the signal of a name sent to a job, if any.
	SignalGet(ctx context.Context, jobID, name string) (Signal, bool, error)
	// SignalList returns the signals sent to a job by time.
	SignalList(ctx context.Context, jobID string) ([]Signal, error)
	// JobEnded reports whether a job exists and has ended, without locking
	// its row: a lock held by a suspending parent would make a claimer skip
	// the child it waits for (FOR UPDATE SKIP LOCKED), and nothing would
	// wake that claimer when the lock went.
	JobEnded(ctx context.Context, jobID string) (bool, error)
}

// StepStore is implemented by every Store [New] returns whose driver keeps
// steps. Find it with [Steps], which looks through wrappers.
type StepStore interface {
	// JobStepRecord records the next step of a running job, fenced by its
	// lease, with its step_recorded event. A stale lease, a seq that is not
	// the next one, or an output over MaxStepBytes changes nothing. The same
	// step again by the same lease (a retry after a lost reply) returns the
	// record as it was.
	JobStepRecord(ctx context.Context, p *JobStepParams) (Job, StepRecord, error)
	// JobStepChild enqueues a child job and records the step naming it, in
	// one transaction fenced by the parent's lease (step_child.go): a stale
	// lease changes nothing, and a retry by the same lease returns the same
	// child and record.
	JobStepChild(ctx context.Context, p *JobStepChildParams) (ChildStep, error)
	// JobSuspend gives the lease of a running job back until a wake time
	// (suspended event): the attempt ends without failing. A wait whose
	// signal already came, or whose child already ended, is refused with
	// ErrWaitOver and changes nothing.
	JobSuspend(ctx context.Context, p *JobSuspendParams) (Job, error)
	// JobSignal sends a named signal to a live job. The first of a name is
	// kept (and wakes the job if it is suspended waiting for it); a later
	// one is refused with ErrSignalTaken.
	JobSignal(ctx context.Context, p *JobSignalParams) (Signal, error)
	// JobSteps returns a job's step records in order.
	JobSteps(ctx context.Context, jobID string) ([]StepRecord, error)
	// JobSignalGet returns the signal of a name sent to a job, if any.
	JobSignalGet(ctx context.Context, jobID, name string) (Signal, bool, error)
	// JobSignals returns the signals sent to a job.
	JobSignals(ctx context.Context, jobID string) ([]Signal, error)
}

// LeasedStepReader is implemented by step stores that read a job's steps
// and signals as the holder of its lease: a store over a server's API,
// whose worker token may read only the jobs it holds (WorkerService's
// GetSteps and GetSignal). The step engine reads through it when the store
// offers it.
type LeasedStepReader interface {
	// JobStepsLeased returns the steps of the job p's lease holds, in order.
	JobStepsLeased(ctx context.Context, p *OwnerParams) ([]StepRecord, error)
	// JobSignalLeased returns the signal of a name sent to that job, if any.
	JobSignalLeased(ctx context.Context, p *OwnerParams, name string) (Signal, bool, error)
	// JobChildLeased returns a child job of that job (one whose
	// parent_job_id it is), for the holder to see how it ended.
	JobChildLeased(ctx context.Context, p *OwnerParams, childID string) (Job, error)
}

// JobStepParams record one step.
type JobStepParams struct {
	OwnerParams
	Seq        int
	Name       string
	Kind       string
	Status     string
	Output     json.RawMessage
	Error      *lifecycle.JobError
	DurationMS int64
}

// JobSuspendParams suspend a running job.
type JobSuspendParams struct {
	OwnerParams
	// Until is the wake time; with For instead, the wake time is For after
	// the transaction's time on the store's clock.
	Until *time.Time
	For   time.Duration
	// Wait says what the job waits for: WaitSleep, WaitSignal(name) or
	// WaitChild(id). A signal or a child's end wakes the job early.
	Wait        string
	ExecutionMS int64
}

// JobSignalParams send a signal.
type JobSignalParams struct {
	JobID   string
	Name    string
	Payload json.RawMessage
	ActorID string
	Now     *time.Time
}

// WaitSleep is the wait of a job that sleeps until its wake time.
const WaitSleep = "sleep"

// WaitSignal is the wait of a job for the signal name.
func WaitSignal(name string) string { return "signal:" + name }

// WaitChild is the wait of a job for the end of its child job id.
func WaitChild(id string) string { return "child:" + id }

// Errors of steps.
var (
	// ErrStepConflict: another step is recorded at that seq (another attempt
	// got there first, or the handler's order changed). A revision conflict.
	ErrStepConflict = fmt.Errorf("step conflict: %w", ErrRevisionConflict)
	// ErrWaitOver: what the job would suspend for is already there. An
	// invalid transition: nothing changed.
	ErrWaitOver = fmt.Errorf("the wait is already over: %w", ErrInvalidTransition)
	// ErrSignalTaken: a signal of that name was already sent to the job. An
	// invalid transition: nothing changed.
	ErrSignalTaken = fmt.Errorf("signal already sent: %w", ErrInvalidTransition)
	// ErrStepTooLarge: a step's output is over MaxStepBytes. It is a
	// validation error: nothing was written.
	ErrStepTooLarge = fmt.Errorf("step too large: %w", ErrValidation)
)

// Steps returns the StepStore of s, looking through wrappers (metrics,
// tracing) with [As], or ErrUnsupported.
func Steps(s Store) (StepStore, error) {
	if st, ok := As[StepStore](s); ok {
		return st, nil
	}
	return nil, fmt.Errorf("durable steps: %w", ErrUnsupported)
}

var _ StepStore = (*engine)(nil)
