package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// ClaimStartTx is implemented by a driver's Tx that claims in one statement:
// it locks the claimable rows and writes the claim (and the start) into
// them in the same pass, instead of reading whole rows and writing them
// back. The rows it writes follow lifecycle's claim and start exactly (the
// differential tests of the drivers hold them to it); the engine applies
// lifecycle to the rows as they were before, checks what the statement
// wrote against it, and writes the events itself.
type ClaimStartTx interface {
	// JobClaimStart claims up to q.Limit queued jobs of q's queues in claim
	// order, skipping rows other transactions hold and jobs with no
	// attempts left, as c says. It returns the jobs as they were before the
	// claim, in claim order, what it wrote of each (in the same order), and
	// the claim's time (c.Now, or the store's clock). It claims nothing when
	// c.RequestID is set and a claimed event already carries it.
	JobClaimStart(ctx context.Context, q ClaimQuery, c ClaimWrite) (prev []lifecycle.Job, wrote []ClaimWrote, at time.Time, err error)
}

// ClaimWrite is what a one-statement claim writes.
type ClaimWrite struct {
	WorkerID string
	// LeaseIDs are the new leases, one per job the claim may take: the job
	// claimed i-th in claim order gets LeaseIDs[i].
	LeaseIDs []string
	LeaseTTL time.Duration
	// Start also starts each job (claimed → running).
	Start     bool
	RequestID string
	Now       *time.Time
}

// ClaimWrote is what a one-statement claim wrote into a job's row, checked
// against lifecycle's transition before commit.
type ClaimWrote struct {
	LeaseID        string
	Rev            int64
	LeaseExpiresAt time.Time
	TimeoutAt      *time.Time
	UpdatedAt      time.Time
}

// claimStart is JobClaim's one-statement path, for a driver that offers it
// and queues without limits. ok is false when it does not apply.
func (e *engine) claimStart(ctx context.Context, tx Tx, b *batch, p *JobClaimParams) (out []Job, claimedAny, ok bool, err error) {
	ct, ok := tx.(ClaimStartTx)
	if !ok {
		return nil, false, false, nil
	}
	if qt, isQT := tx.(QueueTx); isQT {
		limited, kinds, err := e.limits.limited(ctx, qt, p.Queues)
		if err != nil || len(limited) > 0 || len(kinds) > 0 {
			return nil, false, false, err
		}
	}
	leases := make([]string, p.Limit)
	for i := range leases {
		leases[i] = e.newID()
	}
	var at time.Time
	if p.Now != nil {
		at = p.Now.UTC().Truncate(time.Microsecond)
	}
	q := ClaimQuery{Queues: p.Queues, Kinds: p.Kinds, Topics: p.Topics, Limit: p.Limit, Now: at, WorkerID: p.WorkerID}
	cw := ClaimWrite{WorkerID: p.WorkerID, LeaseIDs: leases, LeaseTTL: p.LeaseTTL, Start: p.Start, RequestID: p.RequestID, Now: p.Now}
	prev, wrote, t, err := ct.JobClaimStart(ctx, q, cw)
	if err != nil {
		return nil, false, true, err
	}
	if err := e.claimed(ctx, tx, p, t); err != nil {
		return nil, false, true, err
	}
	out = make([]Job, 0, len(prev))
	b.written = slices.Grow(b.written, len(prev))
	b.events = slices.Grow(b.events, 2*len(prev))
	for i := range prev {
		j, err := claimStep(b, &prev[i], wrote[i], p, notBefore(t, prev[i]))
		if err != nil {
			return nil, false, true, err
		}
		out = append(out, j)
	}
	return out, len(prev) > 0, true, nil
}

// claimStep applies lifecycle's claim (and start) to a job as it was before
// a one-statement claim, checks the row the statement wrote against the
// result, and records the events (the row is written already).
func claimStep(b *batch, prev *lifecycle.Job, w ClaimWrote, p *JobClaimParams, at time.Time) (Job, error) {
	c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: p.WorkerID, LeaseID: w.LeaseID, LeaseTTL: p.LeaseTTL, RequestID: p.RequestID}
	s, err := lifecycle.Apply(*prev, c, at)
	if err != nil {
		return Job{}, fmt.Errorf("store: the claim statement took job %s, which lifecycle refuses to claim: %w", prev.ID, err)
	}
	if p.Start {
		// Only the started job is the row's: the claimed one is an event.
		b.events = append(b.events, *s.Event)
		c.Op, c.RequestID = lifecycle.OpStart, ""
		started, err := lifecycle.Apply(s.Job, c, at)
		if err != nil {
			return Job{}, fmt.Errorf("store: the claim statement started job %s, which lifecycle refuses to start: %w", prev.ID, err)
		}
		b.addWritten(&s.Job, started)
		s = started
	} else {
		b.addWritten(prev, s)
	}
	j := s.Job
	if j.Rev != w.Rev || !j.UpdatedAt.Equal(w.UpdatedAt) || j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.Equal(w.LeaseExpiresAt) || !sameTime(j.TimeoutAt, w.TimeoutAt) {
		return Job{}, fmt.Errorf("store: the claim statement wrote job %s as rev %d, updated %s, lease until %s, timeout %v; lifecycle says rev %d, updated %s, lease until %v, timeout %v",
			j.ID, w.Rev, w.UpdatedAt, w.LeaseExpiresAt, w.TimeoutAt, j.Rev, j.UpdatedAt, j.LeaseExpiresAt, j.TimeoutAt)
	}
	return j, nil
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// sortClaimOrder sorts jobs in claim order: priority descending, then
// created_at, then id.
func sortClaimOrder(jobs []Job) {
	slices.SortFunc(jobs, func(a, b Job) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
