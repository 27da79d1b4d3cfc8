package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/stint-dev/stint/lifecycle"
)

// MaxBatch is the most jobs one enqueue, claim or complete call takes.
const MaxBatch = 10000

func (e *engine) JobEnqueue(ctx context.Context, p *JobEnqueueParams) ([]EnqueueResult, error) {
	if len(p.Jobs) == 0 {
		return nil, lifecycle.Validationf("no jobs to enqueue")
	}
	if len(p.Jobs) > MaxBatch {
		return nil, lifecycle.Validationf("%d jobs in one enqueue: the limit is %d; split the batch", len(p.Jobs), MaxBatch)
	}
	if err := lifecycle.CheckTexts("actor id", p.ActorID, "request id", p.RequestID); err != nil {
		return nil, err
	}
	if err := checkRequestIDs(p); err != nil {
		return nil, err
	}
	var out []EnqueueResult
	err := e.write(ctx, func(tx Tx, b *batch) error {
		var err error
		out, err = e.enqueue(ctx, tx, b, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// enqueue is the body of JobEnqueue inside a transaction, shared with the
// writes that enqueue as part of something else (a cron tick).
func (e *engine) enqueue(ctx context.Context, tx Tx, b *batch, p *JobEnqueueParams) ([]EnqueueResult, error) {
	t, err := now(ctx, tx, p.Now)
	if err != nil {
		return nil, err
	}
	specs, err := e.withDefaults(ctx, tx, p.Jobs, t)
	if err != nil {
		return nil, err
	}
	withDefaults := *p // every field kept; the specs are never the caller's
	withDefaults.Jobs = specs
	p = &withDefaults
	// Validate everything before writing anything: a bad spec rejects the batch.
	for i := range p.Jobs {
		if err := p.Jobs[i].Validate(t); err != nil {
			return nil, fmt.Errorf("job %d of the batch: %w", i, err)
		}
	}
	if err := dependsOnOnlyInRuns(p.Jobs); err != nil {
		return nil, err
	}
	out := make([]EnqueueResult, len(p.Jobs))
	ids, existing, err := e.enqueueIDs(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	live := map[[2]string]int{} // (tenant, dedupe_key) → index in out, within this batch
	for i, spec := range p.Jobs {
		if j, ok := existing[ids[i]]; ok {
			out[i] = EnqueueResult{Job: j, Existing: true}
			continue
		}
		if spec.DedupeKey != "" {
			k := [2]string{spec.Tenant, spec.DedupeKey}
			if at, ok := live[k]; ok {
				out[i] = EnqueueResult{Job: out[at].Job, Existing: true}
				continue
			}
			j, ok, err := tx.JobLiveByDedupe(ctx, spec.Tenant, spec.DedupeKey)
			if err != nil {
				return nil, err
			}
			if ok {
				out[i] = EnqueueResult{Job: j, Existing: true}
				continue
			}
		}
		if spec.RunAt != nil {
			r := spec.RunAt.UTC().Truncate(time.Microsecond)
			spec.RunAt = &r
		}
		if spec.Deadline != nil {
			d := spec.Deadline.UTC().Truncate(time.Microsecond)
			spec.Deadline = &d
		}
		if err := e.admit(ctx, tx, &spec, out[:i]); err != nil {
			return nil, fmt.Errorf("job %d of the batch: %w", i, err)
		}
		s, err := lifecycle.New(ids[i], spec, p.ActorID, requestIDOf(p, i), t)
		if err != nil {
			return nil, fmt.Errorf("job %d of the batch: %w", i, err)
		}
		b.add(nil, s)
		out[i] = EnqueueResult{Job: s.Job}
		if spec.DedupeKey != "" && !s.Job.State.Terminal() {
			live[[2]string{spec.Tenant, spec.DedupeKey}] = i
		}
	}
	return out, nil
}

// requestNS namespaces the job ids derived from enqueue request ids.
var requestNS = uuid.MustParse("6f1d3c1e-5a8b-4f0e-9d52-2f4b7c9a1e07")

// enqueueIDs picks the batch's job ids. Without a request id they are fresh.
// With one they are derived from it, so a repeated enqueue finds the jobs
// the first one made (returned as existing) and creates nothing new.
func (e *engine) enqueueIDs(ctx context.Context, tx Tx, p *JobEnqueueParams) ([]string, map[string]lifecycle.Job, error) {
	ids := make([]string, len(p.Jobs))
	if p.RequestID == "" && len(p.RequestIDs) == 0 {
		for i := range ids {
			ids[i] = e.newID()
		}
		return ids, nil, nil
	}
	for i, spec := range p.Jobs {
		if len(p.RequestIDs) > 0 {
			ids[i] = requestJobID(spec.Tenant, p.ActorID, p.RequestIDs[i], 0)
		} else {
			ids[i] = requestJobID(spec.Tenant, p.ActorID, p.RequestID, i)
		}
	}
	found, err := tx.JobGet(ctx, ids)
	if err != nil || len(found) == 0 {
		return ids, nil, err
	}
	existing := make(map[string]lifecycle.Job, len(found))
	for _, j := range found {
		existing[j.ID] = j
	}
	// The same request id must mean the same request: a job it made must
	// have the kind and queue asked for again.
	for i, spec := range p.Jobs {
		j, ok := existing[ids[i]]
		queue := spec.Queue
		if queue == "" {
			queue = lifecycle.DefaultQueue
		}
		if ok && (j.Kind != spec.Kind || j.Queue != queue) {
			return nil, nil, &lifecycle.Error{Kind: ErrRequestConflict, Op: lifecycle.OpEnqueue,
				Msg: fmt.Sprintf("request id %q was already used for a different enqueue (job %d of the batch differs); use a new request id for a new request", requestIDOf(p, i), i)}
		}
	}
	return ids, existing, nil
}

// checkClaim refuses claim params no store could serve.
func checkClaim(p *JobClaimParams) error {
	switch {
	case p.WorkerID == "":
		return lifecycle.Validationf("worker id is required to claim")
	case len(p.Queues) == 0:
		return lifecycle.Validationf("name at least one queue to claim from")
	case p.Limit < 1 || p.Limit > MaxBatch:
		return lifecycle.Validationf("claim limit %d: expected 1 to %d", p.Limit, MaxBatch)
	case p.LeaseTTL <= 0:
		return lifecycle.Validationf("lease TTL must be positive")
	}
	if err := lifecycle.CheckTexts("worker id", p.WorkerID, "request id", p.RequestID); err != nil {
		return err
	}
	for _, q := range p.Queues {
		if err := lifecycle.CheckName("queue", q); err != nil {
			return err
		}
	}
	for _, k := range p.Kinds {
		if err := lifecycle.CheckName("kind", k); err != nil {
			return err
		}
	}
	for _, t := range p.Topics {
		if err := lifecycle.CheckTopicPattern(t); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) JobClaim(ctx context.Context, p *JobClaimParams) ([]Job, error) {
	if err := checkClaim(p); err != nil {
		return nil, err
	}
	release, err := e.turns.take(ctx, e.limits.known(p.Queues))
	if err != nil {
		return nil, err
	}
	defer release()
	var out []Job
	err = e.write(ctx, func(tx Tx, b *batch) error {
		out = out[:0]
		// One statement claims and starts, where the driver can; a request
		// id already used claims nothing there, and its jobs are looked up
		// only then.
		if jobs, claimedAny, ok, err := e.claimStart(ctx, tx, b, p); ok {
			if err != nil || claimedAny || p.RequestID == "" {
				out = jobs
				return err
			}
			t, err := now(ctx, tx, p.Now)
			if err != nil {
				return err
			}
			out, _, err = e.claimAgain(ctx, tx, b, p, t)
			return err
		}
		if p.RequestID != "" {
			t, err := now(ctx, tx, p.Now)
			if err != nil {
				return err
			}
			again, ok, err := e.claimAgain(ctx, tx, b, p, t)
			if err != nil || ok {
				out = again
				return err
			}
		}
		// Lock first, then read the time (as in one): on PostgreSQL the
		// clock then rides in the claim's own round trip. Claimable jobs
		// are queued ones, whatever the time, so the query needs none.
		var at time.Time
		if p.Now != nil {
			at = *p.Now
		}
		jobs, err := e.claimable(ctx, tx, ClaimQuery{Queues: p.Queues, Kinds: p.Kinds, Topics: p.Topics, Limit: p.Limit, Now: at, WorkerID: p.WorkerID})
		if err != nil {
			return err
		}
		t, err := now(ctx, tx, p.Now)
		if err == nil {
			err = e.claimed(ctx, tx, p, t)
		}
		if err != nil {
			return err
		}
		b.updates = slices.Grow(b.updates, 2*len(jobs))
		b.events = slices.Grow(b.events, 2*len(jobs))
		for _, j := range jobs {
			// The request id goes on the claimed events only (one event per
			// job may carry it): a retried claim finds its jobs by it.
			c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: p.WorkerID, LeaseID: e.newID(), LeaseTTL: p.LeaseTTL, RequestID: p.RequestID}
			at := notBefore(t, j)
			s, err := lifecycle.Apply(j, c, at)
			if err != nil {
				continue // not claimable after all (for example no attempts left): leave it
			}
			job, err := addClaimed(b, j, s, c, at, p.Start)
			if err != nil {
				return err
			}
			out = append(out, job)
		}
		return nil
	})
	return out, err
}

// claimAgain answers a claim whose request id was used before (a retry after
// a lost reply or an uncertain commit): it returns the jobs that claim leased
// which are still held under those leases, started if p.Start asks for it,
// and claims nothing new. ok is false when the request id is new.
func (e *engine) claimAgain(ctx context.Context, tx Tx, b *batch, p *JobClaimParams, t time.Time) ([]Job, bool, error) {
	ids, err := tx.EventJobsByRequest(ctx, p.RequestID, lifecycle.EventClaimed)
	if err != nil || len(ids) == 0 {
		return nil, false, err
	}
	jobs, err := tx.JobGet(ctx, ids)
	if err != nil {
		return nil, true, err
	}
	out := []Job{}
	for _, j := range jobs {
		ev, ok, err := tx.EventByRequest(ctx, j.ID, p.RequestID)
		if err != nil {
			return nil, true, err
		}
		if !ok || ev.Type != lifecycle.EventClaimed {
			continue
		}
		if ev.ActorID != p.WorkerID {
			return nil, true, &lifecycle.Error{Kind: ErrRequestConflict, JobID: j.ID, Op: lifecycle.OpClaim, State: j.State,
				Msg: fmt.Sprintf("claim request id %q was used by worker %q; use a new request id for a new claim", p.RequestID, ev.ActorID)}
		}
		if !j.State.Leased() || j.LeaseID != ev.LeaseID || !t.Before(*j.LeaseExpiresAt) {
			continue // the lease ended or expired since: the job is no longer this claim's
		}
		if p.Start && j.State == lifecycle.Claimed {
			c := lifecycle.Command{Op: lifecycle.OpStart, Actor: lifecycle.ActorOwner, ActorID: p.WorkerID, LeaseID: j.LeaseID}
			s, err := lifecycle.Apply(j, c, notBefore(t, j))
			if err != nil {
				continue // the lease expired: not this claim's any more
			}
			prev := j
			b.add(&prev, s)
			j = s.Job
		}
		out = append(out, j)
	}
	// In claim order, as the first reply had them.
	sortClaimOrder(out)
	return out, true, nil
}

// dependsOnOnlyInRuns refuses any depends_on on a job enqueued on its own.
// A blocked job waits for the run engine to unblock it, and the run engine
// only settles the jobs of runs: outside a run nothing would ever unblock
// it, whether the ids it names exist or not. Runs (RunCreate, RunAddJobs)
// set depends_on themselves and do not come through here.
//
// run_id and step_index are refused for the same reason: a job belongs to
// a run only as one of the run's jobs (its run_jobs row), which the run
// engine settles; a plain job carrying a run's id would show in the run
// without ever counting for it. A child job of a durable step
// (Job.StartChild) carries its parent's id and the step's index, and no
// run: that step_index is allowed.
func dependsOnOnlyInRuns(specs []lifecycle.Spec) error {
	for i, spec := range specs {
		if spec.RunID != "" || (spec.StepIndex != 0 && spec.ParentJobID == "") {
			return fmt.Errorf("job %d of the batch: %w", i, lifecycle.Validationf(
				"run_id %q / step_index %d are set by runs only: enqueue the job without them, create it as part of a run (Client.CreateRun, or `stint runs create`), or add it to its own run from a running job of that run (Job.AddToRun)",
				spec.RunID, spec.StepIndex))
		}
		if len(spec.DependsOn) > 0 {
			return fmt.Errorf("job %d of the batch: %w", i, lifecycle.Validationf(
				"depends_on is only for the jobs of a run (it names %q): nothing unblocks a job enqueued on its own; to run jobs after others, create them together as a run (Client.CreateRun, or `stint runs create --file plan.json`) and name the dependencies there",
				spec.DependsOn[0]))
		}
	}
	return nil
}

// requestIDOf is the request id of job i of an enqueue.
func requestIDOf(p *JobEnqueueParams, i int) string {
	if len(p.RequestIDs) > 0 {
		return p.RequestIDs[i]
	}
	return p.RequestID
}

// checkRequestIDs refuses per-job request ids that cannot name the jobs:
// given with RequestID, not one per job, empty, or repeated.
func checkRequestIDs(p *JobEnqueueParams) error {
	if len(p.RequestIDs) == 0 {
		return nil
	}
	switch {
	case p.RequestID != "":
		return lifecycle.Validationf("give RequestID or RequestIDs, not both")
	case len(p.RequestIDs) != len(p.Jobs):
		return lifecycle.Validationf("%d request ids for %d jobs: give one request id per job", len(p.RequestIDs), len(p.Jobs))
	}
	seen := make(map[string]int, len(p.RequestIDs))
	for i, id := range p.RequestIDs {
		if id == "" {
			return lifecycle.Validationf("job %d of the batch has an empty request id: give every job one", i)
		}
		if err := lifecycle.CheckTexts("request id", id); err != nil {
			return err
		}
		if j, ok := seen[id]; ok {
			return lifecycle.Validationf("jobs %d and %d of the batch have the same request id %q: one request id names one job", j, i, id)
		}
		seen[id] = i
	}
	return nil
}

// addClaimed records in b the claim s of job j (command c, at at) and, when
// start is set, the start that follows it in the same batch; it returns the
// job as the claimer gets it.
func addClaimed(b *batch, j lifecycle.Job, s lifecycle.Step, c lifecycle.Command, at time.Time, start bool) (lifecycle.Job, error) {
	prev := j
	b.add(&prev, s)
	if !start {
		return s.Job, nil
	}
	c.Op, c.RequestID = lifecycle.OpStart, ""
	started, err := lifecycle.Apply(s.Job, c, at)
	if err != nil {
		return s.Job, err
	}
	b.add(&s.Job, started)
	return started.Job, nil
}
