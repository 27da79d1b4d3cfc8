package store

import (
	"context"
	"fmt"
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
	var out []EnqueueResult
	err := e.write(ctx, func(tx Tx, b *batch) error {
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		// Validate everything before writing anything: a bad spec rejects the batch.
		for i := range p.Jobs {
			if err := p.Jobs[i].Validate(t); err != nil {
				return fmt.Errorf("job %d of the batch: %w", i, err)
			}
		}
		out = make([]EnqueueResult, len(p.Jobs))
		ids, existing, err := e.enqueueIDs(ctx, tx, p)
		if err != nil {
			return err
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
					return err
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
			s, err := lifecycle.New(ids[i], spec, p.ActorID, p.RequestID, t)
			if err != nil {
				return fmt.Errorf("job %d of the batch: %w", i, err)
			}
			b.add(nil, s)
			out[i] = EnqueueResult{Job: s.Job}
			if spec.DedupeKey != "" && !s.Job.State.Terminal() {
				live[[2]string{spec.Tenant, spec.DedupeKey}] = i
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	if p.RequestID == "" {
		for i := range ids {
			ids[i] = e.newID()
		}
		return ids, nil, nil
	}
	for i, spec := range p.Jobs {
		// Scoped by tenant and producer, so two of them never share jobs.
		ids[i] = uuid.NewSHA1(requestNS, fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", spec.Tenant, p.ActorID, p.RequestID, i)).String()
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
				Msg: fmt.Sprintf("request id %q was already used for a different enqueue (job %d of the batch differs); use a new request id for a new request", p.RequestID, i)}
		}
	}
	return ids, existing, nil
}

func (e *engine) JobClaim(ctx context.Context, p *JobClaimParams) ([]Job, error) {
	switch {
	case p.WorkerID == "":
		return nil, lifecycle.Validationf("worker id is required to claim")
	case len(p.Queues) == 0:
		return nil, lifecycle.Validationf("name at least one queue to claim from")
	case p.Limit < 1 || p.Limit > MaxBatch:
		return nil, lifecycle.Validationf("claim limit %d: expected 1 to %d", p.Limit, MaxBatch)
	case p.LeaseTTL <= 0:
		return nil, lifecycle.Validationf("lease TTL must be positive")
	}
	var out []Job
	err := e.write(ctx, func(tx Tx, b *batch) error {
		out = out[:0]
		// Lock first, then read the time (as in one): on PostgreSQL the
		// clock then rides in the claim's own round trip. Claimable jobs
		// are queued ones, whatever the time, so the query needs none.
		var at time.Time
		if p.Now != nil {
			at = *p.Now
		}
		jobs, err := tx.JobClaimable(ctx, ClaimQuery{Queues: p.Queues, Kinds: p.Kinds, Limit: p.Limit, Now: at})
		if err != nil {
			return err
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: p.WorkerID, LeaseID: e.newID(), LeaseTTL: p.LeaseTTL}
			at := notBefore(t, j)
			s, err := lifecycle.Apply(j, c, at)
			if err != nil {
				continue // not claimable after all (for example no attempts left): leave it
			}
			prev := j
			b.add(&prev, s)
			if p.Start {
				c.Op = lifecycle.OpStart
				started, err := lifecycle.Apply(s.Job, c, at)
				if err != nil {
					return err
				}
				b.add(&s.Job, started)
				s = started
			}
			out = append(out, s.Job)
		}
		return nil
	})
	return out, err
}
