package store

import (
	"context"

	"github.com/stint-dev/stint/lifecycle"
)

const defaultMaintainLimit = 1000

// maintain applies, in one transaction, the command cmd returns to each job
// due for one of kinds. Jobs the lifecycle refuses (no longer due) are left.
func (e *engine) maintain(ctx context.Context, p *MaintainParams, kinds []DueKind, cmd func(lifecycle.Job, DueKind) lifecycle.Command) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultMaintainLimit
	}
	actor := p.ActorID
	if actor == "" {
		actor = "stint"
	}
	n := 0
	err := e.write(ctx, func(tx Tx, b *batch) error {
		n = 0
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, k := range kinds {
			jobs, err := tx.JobDue(ctx, DueQuery{Kind: k, Now: t, Limit: limit - n})
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if seen[j.ID] {
					continue
				}
				c := cmd(j, k)
				c.Actor, c.ActorID = lifecycle.ActorSystem, actor
				if err := e.retrySchedule(ctx, tx, j, &c, t); err != nil {
					return err
				}
				s, err := lifecycle.Apply(j, c, notBefore(t, j))
				if err != nil || s.Noop() {
					continue
				}
				seen[j.ID] = true
				prev := j
				b.add(&prev, s)
				n++
			}
			if n >= limit {
				break
			}
		}
		return nil
	})
	return n, err
}

func (e *engine) JobPromoteDue(ctx context.Context, p *MaintainParams) (int, error) {
	return e.maintain(ctx, p, []DueKind{DuePromote}, func(lifecycle.Job, DueKind) lifecycle.Command {
		return lifecycle.Command{Op: lifecycle.OpPromote}
	})
}

// JobStallExpired stalls claimed and running jobs whose lease expired, and
// cancels cancel_requested ones (their owner can no longer acknowledge).
func (e *engine) JobStallExpired(ctx context.Context, p *MaintainParams) (int, error) {
	return e.maintain(ctx, p, []DueKind{DueLeaseExpired}, func(j lifecycle.Job, _ DueKind) lifecycle.Command {
		if j.State == lifecycle.CancelRequested {
			return lifecycle.Command{Op: lifecycle.OpForceCancel}
		}
		return lifecycle.Command{Op: lifecycle.OpStall}
	})
}

func (e *engine) JobRequeueStalled(ctx context.Context, p *MaintainParams) (int, error) {
	return e.maintain(ctx, p, []DueKind{DueStalled}, func(lifecycle.Job, DueKind) lifecycle.Command {
		return lifecycle.Command{Op: lifecycle.OpRequeue}
	})
}

func (e *engine) JobForceCancelDue(ctx context.Context, p *MaintainParams) (int, error) {
	return e.maintain(ctx, p, []DueKind{DueCancelDeadline}, func(lifecycle.Job, DueKind) lifecycle.Command {
		return lifecycle.Command{Op: lifecycle.OpForceCancel}
	})
}

// JobTimeOutDue times out jobs past their deadline (any non-terminal state)
// and running attempts past their timeout.
func (e *engine) JobTimeOutDue(ctx context.Context, p *MaintainParams) (int, error) {
	return e.maintain(ctx, p, []DueKind{DueDeadline, DueTimeout}, func(_ lifecycle.Job, k DueKind) lifecycle.Command {
		return lifecycle.Command{Op: lifecycle.OpTimeOut, Deadline: k == DueDeadline}
	})
}
