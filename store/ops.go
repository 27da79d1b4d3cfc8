package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func owner(p OwnerParams, op lifecycle.Op) lifecycle.Command {
	return lifecycle.Command{Op: op, Actor: lifecycle.ActorOwner, LeaseID: p.LeaseID, RequestID: p.RequestID}
}

func (e *engine) JobStart(ctx context.Context, p *OwnerParams) (Job, error) {
	return e.one(ctx, p.JobID, owner(*p, lifecycle.OpStart), nil, p.Now)
}

func (e *engine) JobHeartbeat(ctx context.Context, p *JobHeartbeatParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpHeartbeat)
	c.LeaseTTL, c.Progress, c.Phase = p.LeaseTTL, p.Progress, p.Phase
	return e.one(ctx, p.JobID, c, nil, p.Now)
}

func (e *engine) JobCheckpoint(ctx context.Context, p *JobCheckpointParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpCheckpoint)
	c.Checkpoint, c.Progress, c.Phase = p.Checkpoint, p.Progress, p.Phase
	c.UsageDelta = lifecycle.Usage{Steps: p.Steps, Cost: p.Cost}
	return e.one(ctx, p.JobID, c, nil, p.Now)
}

func (e *engine) JobFail(ctx context.Context, p *JobFailParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpFail)
	err := p.Error
	c.Error, c.RetryAt, c.Backoff, c.ExecutionMS = &err, p.RetryAt, p.Backoff, p.ExecutionMS
	if p.RetryAfter < 0 {
		return Job{}, lifecycle.Validationf("retry after %s is negative: give a delay of zero or more", p.RetryAfter)
	}
	if p.RetryAt != nil || p.RetryAfter == 0 {
		return e.one(ctx, p.JobID, c, nil, p.Now)
	}
	// The delay counts from the transaction's time on the store's clock,
	// never the worker's, so a worker with a skewed clock retries on time.
	return e.oneWith(ctx, p.JobID, c, nil, p.Now, func(c *lifecycle.Command, now time.Time) {
		at := now.Add(p.RetryAfter).Truncate(time.Microsecond)
		c.RetryAt = &at
	})
}

func (e *engine) JobHalt(ctx context.Context, p *JobHaltParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpHalt)
	c.ReasonCode, c.Reason, c.ExecutionMS = p.ReasonCode, p.Reason, p.ExecutionMS
	return e.one(ctx, p.JobID, c, nil, p.Now)
}

// JobRelease stalls the job by its owner; with Requeue the system requeues
// (or dead-letters) it in the same transaction, so another worker can claim
// it at once instead of after the reaper's next pass.
func (e *engine) JobRelease(ctx context.Context, p *JobReleaseParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpStall)
	c.Reason = p.Reason
	if !p.Requeue {
		return e.one(ctx, p.JobID, c, nil, p.Now)
	}
	var out lifecycle.Job
	err := e.write(ctx, func(tx Tx, b *batch) error {
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		jobs, err := tx.JobGet(ctx, []string{p.JobID})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return notFound(p.JobID)
		}
		if out, err = e.step(ctx, tx, b, jobs[0], c, nil, t); err != nil || out.State != lifecycle.Stalled || out.Rev == jobs[0].Rev {
			return err
		}
		out, err = e.step(ctx, tx, b, out, lifecycle.Command{Op: lifecycle.OpRequeue, Actor: lifecycle.ActorSystem, ActorID: "release"}, nil, t)
		return err
	})
	return out, err
}

func (e *engine) JobAckCancel(ctx context.Context, p *OwnerParams) (Job, error) {
	return e.one(ctx, p.JobID, owner(*p, lifecycle.OpAckCancel), nil, p.Now)
}

func (e *engine) JobDeadLetter(ctx context.Context, p *JobDeadLetterParams) (Job, error) {
	c := owner(p.OwnerParams, lifecycle.OpDeadLetter)
	if p.LeaseID == "" {
		c.Actor = lifecycle.ActorSystem
	}
	c.ReasonCode, c.Error = p.ReasonCode, p.Error
	return e.one(ctx, p.JobID, c, nil, p.Now)
}

func (e *engine) JobCancel(ctx context.Context, p *JobCancelParams) (Job, error) {
	c := lifecycle.Command{Op: lifecycle.OpCancel, Actor: lifecycle.ActorClient, ActorID: p.ActorID, RequestID: p.RequestID, Reason: p.Reason}
	if p.Hard {
		c.Op = lifecycle.OpCancelHard
	}
	return e.one(ctx, p.JobID, c, p.ExpectedRev, p.Now)
}

func (e *engine) JobApply(ctx context.Context, p *JobApplyParams) (Job, error) {
	if p.Command.Op == lifecycle.OpStep { // a step event without its record would fail verify
		return e.refuseStep(ctx, p)
	}
	return e.one(ctx, p.JobID, p.Command, p.ExpectedRev, p.Now)
}

// JobComplete completes many jobs in one transaction, each fenced on its own.
// The jobs whose owner passed the record it holds (Held) are not read: the
// completion is applied to that record and written where the row is still
// at its rev. If any row moved on, the transaction rolls back and the batch
// is done again, reading every row.
func (e *engine) JobComplete(ctx context.Context, ps []JobCompleteParams) ([]Result, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	held := false
	for i, p := range ps {
		if err := checkID(p.JobID); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		held = held || usable(p)
	}
	out, err := e.complete(ctx, ps, held)
	if held && (errors.Is(err, ErrRevisionConflict) || errors.Is(err, errHeldRejected)) {
		out, err = e.complete(ctx, ps, false)
	}
	return out, err
}

// errHeldRejected rolls back a completion that a held record would refuse:
// only the row may refuse it (the record may be older than the row).
var errHeldRejected = errors.New("store: a held record refuses the completion; judge the row")

// WriteHint is implemented by a driver's Tx that does better knowing, before
// its first statement, that the transaction will write (PostgreSQL assigns
// the transaction's id with its first round trip instead of at COMMIT).
type WriteHint interface {
	WillWrite()
}

// usable reports whether p's Held record may stand for the row.
func usable(p JobCompleteParams) bool {
	return p.Held != nil && p.Held.ID == p.JobID && p.Held.LeaseID == p.LeaseID
}

// complete is one try of JobComplete; with useHeld it trusts the records
// the owners hold (fenced on their rev when written).
func (e *engine) complete(ctx context.Context, ps []JobCompleteParams, useHeld bool) ([]Result, error) {
	var ids []string
	for _, p := range ps {
		if !useHeld || !usable(p) {
			ids = append(ids, p.JobID)
		}
	}
	var out []Result
	err := e.write(ctx, func(tx Tx, b *batch) error {
		out = make([]Result, len(ps))
		b.updates = make([]JobUpdate, 0, len(ps))
		b.events = make([]lifecycle.Event, 0, len(ps))
		byID := make(map[string]lifecycle.Job, len(ps))
		if len(ids) == 0 {
			if h, ok := tx.(WriteHint); ok {
				h.WillWrite()
			}
		} else {
			jobs, err := tx.JobGet(ctx, ids)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				byID[j.ID] = j
			}
		}
		t, err := now(ctx, tx, ps[0].Now) // after the locks: see one
		if err != nil {
			return err
		}
		if err := b.lookAhead(ctx, tx, len(ps), func(i int) OwnerParams { return ps[i].OwnerParams }); err != nil {
			return err
		}
		for i, p := range ps {
			j, ok := byID[p.JobID]
			fromHeld := !ok && useHeld && usable(p)
			if fromHeld {
				j, ok = *p.Held, true
			}
			if !ok {
				out[i].Err = notFound(p.JobID)
				continue
			}
			c := owner(p.OwnerParams, lifecycle.OpComplete)
			c.Result, c.ResultPtr, c.ExecutionMS = p.Result, p.ResultPtr, p.ExecutionMS
			next, err := e.step(ctx, tx, b, j, c, nil, t)
			if err != nil && (!IsRejection(err) || fromHeld) {
				if fromHeld {
					return errHeldRejected
				}
				return err
			}
			out[i] = Result{Job: next, Err: err}
			byID[p.JobID] = next
		}
		return nil
	})
	return out, err
}
