package stint

import (
	"context"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Runs: workflows of jobs. A run is a DAG of jobs named within it; each job
// waits for the jobs it DependsOn and is required unless AllowFailure. The
// run succeeds when every required job succeeded and fails as soon as one
// ends without success; the dependents of a job that ended badly are
// cancelled (upstream_failed) in the same transaction.
type (
	// RunSpec names a run and sets its options (OnFailure, Timeout).
	RunSpec = lifecycle.RunSpec
	// RunJob is one job of a run to create: its name, the names it depends
	// on, whether it may fail, and the job itself.
	RunJob = store.RunJobSpec
	// RunView is a run with its jobs and their states.
	RunView = store.RunView
	// RunRecord is a run's row.
	RunRecord = lifecycle.Run
	// RunEvent is one transition of a run.
	RunEvent = lifecycle.RunEvent
)

// CreateRun creates a run and its jobs in one transaction. A depends_on
// naming a job outside the run, or a cycle, refuses the whole run (an error
// wrapping [ErrValidation]) and writes nothing.
func (c *Client) CreateRun(ctx context.Context, spec RunSpec, jobs []RunJob) (RunView, error) {
	if spec.ActorID == "" {
		spec.ActorID = c.cfg.ActorID
	}
	return c.s.RunCreate(ctx, &store.RunCreateParams{Run: spec, Jobs: jobs})
}

// GetRun returns a run with its jobs.
func (c *Client) GetRun(ctx context.Context, id string) (RunView, error) { return c.s.RunGet(ctx, id) }

// ListRuns returns runs ordered by id; page with p.AfterID.
func (c *Client) ListRuns(ctx context.Context, p store.RunListParams) ([]RunRecord, error) {
	return c.s.RunList(ctx, &p)
}

// RunEvents returns a run's own transitions, oldest first.
func (c *Client) RunEvents(ctx context.Context, id string) ([]RunEvent, error) {
	return c.s.RunEvents(ctx, id)
}

// CancelRun cancels a run two-phase: jobs nobody holds end at once, running
// ones are asked to stop (forced at their cancel deadline), and the run is
// cancelled when all have ended.
func (c *Client) CancelRun(ctx context.Context, id, reason string) (RunView, error) {
	return c.s.RunCancel(ctx, &store.RunCancelParams{RunID: id, Reason: reason, ActorID: c.cfg.ActorID})
}

// RerunRun creates a new run linked to an ended one (rerun_of): all its
// jobs, or with failedOnly only those that did not succeed.
func (c *Client) RerunRun(ctx context.Context, id string, failedOnly bool) (RunView, error) {
	return c.s.RunRerun(ctx, &store.RunRerunParams{RunID: id, FailedOnly: failedOnly, ActorID: c.cfg.ActorID})
}

// AddToRun adds jobs to the run of the running job j (a dynamic plan); they
// may depend on any job of the run, by name. It fails once the job is no
// longer this handler's (ErrStaleLease) or when j is not part of a run.
func (j *Job) AddToRun(ctx context.Context, jobs ...RunJob) (RunView, error) {
	if j.rec.RunID == "" {
		return RunView{}, fmt.Errorf("stint: job %s is not part of a run: %w", j.rec.ID, ErrValidation)
	}
	return j.a.p.store.RunAddJobs(context.WithoutCancel(ctx), &store.RunAddJobsParams{Owner: j.a.owner(), Jobs: jobs})
}
