package store

import (
	"context"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Run and RunEvent are the lifecycle's run types.
type (
	Run      = lifecycle.Run
	RunEvent = lifecycle.RunEvent
)

// RunStore is the storage contract for runs (DAGs of jobs). A dependency's
// end, the unblocking or upstream-failure cancelling of its dependents, the
// run's own transition and the outbox rows they produce commit in the one
// transaction of the job's transition.
type RunStore interface {
	// RunCreate creates a run and its jobs in one transaction. A depends_on
	// naming a job outside the run, or a cycle, refuses the run with nothing
	// written.
	RunCreate(ctx context.Context, p *RunCreateParams) (RunView, error)
	// RunAddJobs adds jobs to a run from one of its running jobs (a dynamic
	// plan), fenced on that job's lease.
	RunAddJobs(ctx context.Context, p *RunAddJobsParams) (RunView, error)
	// RunCancel cancels a run two-phase: its jobs are cancelled (leased ones
	// asked to stop) and the run is cancelled when the last one has ended.
	RunCancel(ctx context.Context, p *RunCancelParams) (RunView, error)
	// RunRerun creates a new run linked to an ended one (rerun_of), with all
	// its jobs or only those that did not succeed.
	RunRerun(ctx context.Context, p *RunRerunParams) (RunView, error)
	// RunTimeOutDue times out up to Limit runs past their timeout, with
	// their live jobs, and returns how many it changed.
	RunTimeOutDue(ctx context.Context, p *MaintainParams) (int, error)
	// RunGet returns a run with its jobs.
	RunGet(ctx context.Context, id string) (RunView, error)
	// RunList returns runs ordered by id.
	RunList(ctx context.Context, p *RunListParams) ([]Run, error)
	// RunEvents returns a run's events in order.
	RunEvents(ctx context.Context, id string) ([]RunEvent, error)
}

// RunJobSpec is one job of a run: its name within the run, the names it
// depends on, and how its end counts for the run.
type RunJobSpec struct {
	Name string
	// Spec is the job itself; its RunID, StepIndex and DependsOn are set by
	// the store, and its Deadline is capped at the run's timeout.
	Spec      lifecycle.Spec
	DependsOn []string
	// AllowFailure: the job's failure never fails the run.
	AllowFailure bool
	// NeedsSuccess: the job needs every dependency to succeed, even one
	// allowed to fail.
	NeedsSuccess bool
	// Planner: the job plans the run (adds jobs); its failure fails the run
	// with plan_failed.
	Planner bool
}

// RunCreateParams are the run to create.
type RunCreateParams struct {
	// Run names the run and its options; its ID defaults to a new id.
	Run  lifecycle.RunSpec
	Jobs []RunJobSpec
	Now  *time.Time
}

// RunAddJobsParams add jobs to the run of a running job.
type RunAddJobsParams struct {
	// Owner is the running job adding to its own run, with its lease.
	Owner OwnerParams
	Jobs  []RunJobSpec
}

// RunCancelParams cancel a run.
type RunCancelParams struct {
	RunID   string
	Reason  string
	ActorID string
	Now     *time.Time
}

// RunRerunParams make a new run from an ended one.
type RunRerunParams struct {
	RunID string
	// FailedOnly reruns only the jobs that did not succeed; dependencies on
	// jobs that succeeded are dropped (they are done).
	FailedOnly bool
	ActorID    string
	Now        *time.Time
}

// RunListParams select runs.
type RunListParams struct {
	States []lifecycle.RunState
	// AfterID pages: only runs whose id sorts after it.
	AfterID string
	// Limit defaults to 100 and is at most 10,000.
	Limit int
}

// RunView is a run with its jobs, in creation order.
type RunView struct {
	Run  Run      `json:"run"`
	Jobs []RunJob `json:"jobs"`
}

// RunJob is one job of a run as the run engine keeps it: the row of
// run_jobs with the job's current state and dependencies read from jobs.
type RunJob struct {
	RunID        string          `json:"run_id"`
	Name         string          `json:"name"`
	JobID        string          `json:"job_id"`
	AllowFailure bool            `json:"allow_failure,omitempty"`
	NeedsSuccess bool            `json:"needs_success,omitempty"`
	Planner      bool            `json:"planner,omitempty"`
	State        lifecycle.State `json:"state"`
	// DependsOn are the names of the jobs it depends on.
	DependsOn []string `json:"depends_on,omitempty"`
	// dependsOnIDs are the job ids, as the jobs table keeps them.
	DependsOnIDs []string `json:"-"`
}

// RunTx is what a driver's transaction adds for runs and the outbox. The
// engine asserts it on the driver's Tx; a driver without it has no runs.
type RunTx interface {
	// RunInsert inserts a new run row.
	RunInsert(ctx context.Context, r lifecycle.Run) error
	// RunGet returns the run, locked for update where the backend locks rows.
	RunGet(ctx context.Context, id string) (lifecycle.Run, bool, error)
	// RunUpdate writes the run where its row still has prevRev, else
	// ErrRevisionConflict.
	RunUpdate(ctx context.Context, r lifecycle.Run, prevRev int64) error
	// RunList returns runs matching p ordered by id.
	RunList(ctx context.Context, p RunListParams) ([]lifecycle.Run, error)
	// RunDue returns the ids of up to limit live runs whose timeout_at <= now.
	RunDue(ctx context.Context, now time.Time, limit int) ([]string, error)
	// RunEventInsert appends run events; the backend assigns their ids.
	RunEventInsert(ctx context.Context, events []lifecycle.RunEvent) error
	// RunEventList returns a run's events ordered by rev.
	RunEventList(ctx context.Context, runID string) ([]lifecycle.RunEvent, error)
	// RunJobInsert records jobs of runs (name and flags; the job row holds the rest).
	RunJobInsert(ctx context.Context, jobs []RunJob) error
	// RunJobList returns a run's jobs in creation order, with each job's
	// state and depends_on (job ids) read from the jobs table, without locks.
	RunJobList(ctx context.Context, runID string) ([]RunJob, error)

	// WebhookInsert, WebhookList and WebhookDelete keep the subscriptions.
	WebhookInsert(ctx context.Context, w Webhook) error
	WebhookList(ctx context.Context) ([]Webhook, error)
	WebhookDelete(ctx context.Context, id string) (bool, error)
	// OutboxInsert appends messages; the backend assigns their ids.
	OutboxInsert(ctx context.Context, ms []OutboxMessage) error
	// OutboxMatch appends, in order, one pending message per (candidate,
	// webhook whose filters it passes), matching in the database so that a
	// transaction pays no extra round trip for it (PostgreSQL queues it with
	// the transaction's other writes).
	OutboxMatch(ctx context.Context, cs []OutboxCandidate) error
	// OutboxHeads returns up to limit pending messages due at now that are
	// the oldest pending message of their (webhook, aggregate), locked and
	// skipping locked rows.
	OutboxHeads(ctx context.Context, now time.Time, limit int) ([]OutboxMessage, error)
	// OutboxUpdate writes the delivery fields of messages.
	OutboxUpdate(ctx context.Context, ms []OutboxMessage) error
	// OutboxGet returns one message.
	OutboxGet(ctx context.Context, id int64) (OutboxMessage, bool, error)
	// OutboxList returns messages matching p ordered by id.
	OutboxList(ctx context.Context, p OutboxListParams) ([]OutboxMessage, error)
}
