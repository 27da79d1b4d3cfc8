package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Job, Event and Provenance are the lifecycle's domain types.
type (
	Job        = lifecycle.Job
	Event      = lifecycle.Event
	Provenance = lifecycle.Provenance
)

// Store is the storage contract: one method per lifecycle operation, batched
// where the hot path needs it. Every mutating method is atomic with its
// events. A method given a Now of nil uses the store's own clock (the
// database's on PostgreSQL); tests set it.
type Store interface {
	// JobEnqueue creates jobs in one transaction. An invalid spec rejects the
	// whole batch and writes nothing. A spec whose (tenant, dedupe_key)
	// matches a live job returns that job (Existing) instead of a new one.
	JobEnqueue(ctx context.Context, p *JobEnqueueParams) ([]EnqueueResult, error)
	// JobClaim leases up to Limit queued jobs of the given queues and kinds to
	// one worker, in claim order (priority DESC, created_at, id); with Start
	// they are started in the same transaction.
	JobClaim(ctx context.Context, p *JobClaimParams) ([]Job, error)

	// Owner operations. Each presents the lease its claim returned.
	JobStart(ctx context.Context, p *OwnerParams) (Job, error)
	JobHeartbeat(ctx context.Context, p *JobHeartbeatParams) (Job, error)
	JobCheckpoint(ctx context.Context, p *JobCheckpointParams) (Job, error)
	// JobComplete completes many jobs in one transaction; each is fenced on
	// its own lease and gets its own result.
	JobComplete(ctx context.Context, p []JobCompleteParams) ([]Result, error)
	JobFail(ctx context.Context, p *JobFailParams) (Job, error)
	JobHalt(ctx context.Context, p *JobHaltParams) (Job, error)
	// JobRelease gives a lease back: the job is stalled and requeued by the reaper.
	JobRelease(ctx context.Context, p *JobReleaseParams) (Job, error)
	JobAckCancel(ctx context.Context, p *OwnerParams) (Job, error)
	// JobDeadLetter dead-letters a job: by its owner when LeaseID is set, by
	// the system otherwise.
	JobDeadLetter(ctx context.Context, p *JobDeadLetterParams) (Job, error)

	// JobCancel cancels a job: soft (claimed and running jobs go to
	// cancel_requested) or hard (any non-terminal job is cancelled at once).
	JobCancel(ctx context.Context, p *JobCancelParams) (Job, error)
	// JobApply performs any lifecycle command on one job: the general form of
	// the methods above, used by maintenance services and tests.
	JobApply(ctx context.Context, p *JobApplyParams) (Job, error)

	// Maintenance: each finds the jobs due for its transition at now and
	// applies it to up to Limit of them, returning how many changed.
	JobPromoteDue(ctx context.Context, p *MaintainParams) (int, error)
	JobStallExpired(ctx context.Context, p *MaintainParams) (int, error)
	JobRequeueStalled(ctx context.Context, p *MaintainParams) (int, error)
	JobForceCancelDue(ctx context.Context, p *MaintainParams) (int, error)
	JobTimeOutDue(ctx context.Context, p *MaintainParams) (int, error)

	// JobRetain deletes old terminal jobs with their events and provenance,
	// and old heartbeat events; Verify stays clean after it.
	JobRetain(ctx context.Context, p *RetainParams) (RetainResult, error)
	// LeaderElect takes or renews a leader seat; LeaderResign frees it. On
	// PostgreSQL they let exactly one node run the singleton services.
	LeaderElect(ctx context.Context, p *LeaderElectParams) (Leadership, error)
	LeaderResign(ctx context.Context, name, id string) error

	// Reads.
	JobGet(ctx context.Context, id string) (Job, error)
	JobList(ctx context.Context, p *JobListParams) ([]Job, error)
	JobEvents(ctx context.Context, id string) ([]Event, error)
	JobProvenance(ctx context.Context, id string) (Provenance, error)
	// Verify replays every job's events through the lifecycle and reports
	// each job whose replay disagrees with its row or breaks an invariant.
	Verify(ctx context.Context, p *VerifyParams) (VerifyReport, error)

	// Wakeups returns a channel that receives a queue name whenever jobs may
	// have become claimable in it (in this process, and on PostgreSQL in any
	// process), and a function that ends the subscription. Best effort:
	// claimers also poll.
	Wakeups() (<-chan string, func())
	// LeaseNotices returns a channel that receives the id of a job whenever
	// its lease changed under its owner (a cancel was requested, the lease
	// was revoked by a hard cancel, a timeout, a deadline or expiry), in
	// this process and on PostgreSQL in any process, and a function that
	// ends the subscription. Best effort: owners also heartbeat.
	LeaseNotices() (<-chan string, func())

	// Close releases the store's connections.
	Close() error

	// Runs (run.go) and the outbox (outbox.go).
	RunStore
	OutboxStore
}

// JobEnqueueParams are the jobs to create.
type JobEnqueueParams struct {
	Jobs []lifecycle.Spec
	// ActorID names the producer in the events; optional.
	ActorID string
	// RequestID makes the enqueue idempotent: the same request id again
	// returns the jobs the first call created (Existing) and writes nothing.
	// It is recorded on the enqueued events. Optional.
	RequestID string
	// RequestIDs, instead of RequestID, gives each job a request id of its
	// own (one per job, all distinct): job i is then exactly the job an
	// enqueue of that one spec under RequestIDs[i] makes, so many requests
	// share one transaction and each stays idempotent on its own.
	RequestIDs []string
	Now        *time.Time
}

// EnqueueResult is one enqueued job, or the live job its dedupe key matched.
type EnqueueResult struct {
	Job      Job
	Existing bool
}

// JobClaimParams ask for jobs to work.
type JobClaimParams struct {
	// WorkerID names the owner; required.
	WorkerID string
	// Queues to claim from; at least one.
	Queues []string
	// Kinds the worker can run; empty means any kind.
	Kinds []string
	// Topics are topic patterns (lifecycle.CheckTopicPattern): when any are
	// given, only jobs of Queues whose topic matches one of them are
	// claimed. They filter within the queues; they never add queues.
	Topics []string
	// Limit is the most jobs to claim; at least 1.
	Limit int
	// LeaseTTL is how long the lease lasts without a heartbeat; required.
	LeaseTTL time.Duration
	// Start also starts each claimed job (claimed → running) in the same
	// transaction: the in-process pool claims and starts in one step.
	Start bool
	// RequestID makes the claim retryable: the same request id again (after
	// a lost reply or an uncertain commit) returns the jobs the first call
	// leased that are still held under those leases, and claims nothing new.
	// Optional.
	RequestID string
	// RequestIDs, instead of RequestID, gives each job a request id of its
	// own (one per job, all distinct): job i is then exactly the job an
	// enqueue of that one spec under RequestIDs[i] makes, so many requests
	// share one transaction and each stays idempotent on its own.
	RequestIDs []string
	Now        *time.Time
}

// OwnerParams identify an owner operation: the job, the lease presented, and
// an optional request id for idempotent retries.
type OwnerParams struct {
	JobID     string
	LeaseID   string
	RequestID string
	// RequestIDs, instead of RequestID, gives each job a request id of its
	// own (one per job, all distinct): job i is then exactly the job an
	// enqueue of that one spec under RequestIDs[i] makes, so many requests
	// share one transaction and each stays idempotent on its own.
	RequestIDs []string
	Now        *time.Time
}

// JobHeartbeatParams extend a lease.
type JobHeartbeatParams struct {
	OwnerParams
	// LeaseTTL is the new lease length from now; required.
	LeaseTTL time.Duration
	Progress json.RawMessage
	Phase    string
}

// JobCheckpointParams save resumable state and report progress and usage.
type JobCheckpointParams struct {
	OwnerParams
	Checkpoint json.RawMessage
	Progress   json.RawMessage
	Phase      string
	// Steps and Cost are used since the last checkpoint; over budget halts the job.
	Steps int64
	Cost  int64
}

// JobCompleteParams complete one job with its result.
type JobCompleteParams struct {
	OwnerParams
	Result      json.RawMessage
	ResultPtr   string
	ExecutionMS int64
	// Held, when set, is the job as its owner last had it from the store
	// (what its claim or last heartbeat returned). The store then applies
	// the completion to it without reading the row, and writes it only
	// where the row is still at Held's rev; a row that moved on since is
	// read and judged as without Held. Optional: an optimization only.
	Held *Job
}

// JobFailParams fail the current attempt.
type JobFailParams struct {
	OwnerParams
	Error lifecycle.JobError
	// RetryAt overrides the backoff (a handler's retry-after) with a time.
	RetryAt *time.Time
	// RetryAfter overrides the backoff with a delay, resolved on the store's
	// clock (never the worker's). Ignored when RetryAt is set.
	RetryAfter time.Duration
	// Backoff schedules the retry when neither RetryAt nor RetryAfter is
	// set. Zero, the store uses the default backoff of the job's kind,
	// then of its queue (SpecDefaults), then lifecycle.DefaultBackoff.
	Backoff     lifecycle.Backoff
	ExecutionMS int64
}

// JobHaltParams stop a job cleanly by policy.
type JobHaltParams struct {
	OwnerParams
	ReasonCode  string
	Reason      string
	ExecutionMS int64
}

// JobReleaseParams give a lease back.
type JobReleaseParams struct {
	OwnerParams
	Reason string
	// Requeue also requeues the stalled job in the same transaction (or
	// dead-letters it when no attempts are left).
	Requeue bool
}

// JobDeadLetterParams move a job to the dead-letter queue.
type JobDeadLetterParams struct {
	OwnerParams
	ReasonCode string
	Error      *lifecycle.JobError
}

// JobCancelParams cancel a job.
type JobCancelParams struct {
	JobID  string
	Hard   bool
	Reason string
	// ActorID names who cancels; optional.
	ActorID   string
	RequestID string
	// ExpectedRev, when set, makes the cancel fail with ErrRevisionConflict
	// if the job changed since the caller read it.
	ExpectedRev *int64
	Now         *time.Time
}

// JobApplyParams perform one command on one job.
type JobApplyParams struct {
	JobID       string
	Command     lifecycle.Command
	ExpectedRev *int64
	Now         *time.Time
}

// Result is the outcome for one item of a batch: the job, or why it was rejected.
type Result struct {
	Job Job
	Err error
}

// MaintainParams bound one pass of a maintenance operation.
type MaintainParams struct {
	// Limit is the most jobs changed in one call. Defaults to 1000.
	Limit int
	// ActorID names the service in the events.
	ActorID string
	Now     *time.Time
}

// JobListParams filter and page a job listing.
type JobListParams struct {
	States []lifecycle.State
	Queue  string
	Kind   string
	// AfterID pages: only jobs whose id sorts after it.
	AfterID string
	// Limit defaults to 100 and is at most 10,000.
	Limit int
}

// VerifyParams bound a verify pass.
type VerifyParams struct {
	// OnFinding, when set, is called for each finding as it is found.
	OnFinding func(Finding)
	// OnJob, when set, is called for every job Verify reads, with its
	// events, in id order: a caller that looks at every job (stint bench's
	// check) reads them once.
	OnJob func(Job, []Event)
}

// Finding is one job whose events and row disagree.
type Finding struct {
	JobID   string `json:"job_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	Problem string `json:"problem"`
}

// VerifyReport summarizes a verify pass.
type VerifyReport struct {
	Jobs     int       `json:"jobs"`
	Events   int       `json:"events"`
	Runs     int       `json:"runs"`
	Findings []Finding `json:"findings"`
}
