package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// OutboxHeadsFilterTx is implemented by a driver's Tx that can claim the
// heads of some webhooks only (OutboxClaimParams.Webhooks, SkipWebhooks).
type OutboxHeadsFilterTx interface {
	// OutboxHeadsOf is OutboxHeads restricted to the webhooks in only
	// (all when empty) and not in skip.
	OutboxHeadsOf(ctx context.Context, now time.Time, limit int, only, skip []string) ([]OutboxMessage, error)
}

// OutboxDeliverManyTx is implemented by a driver's Tx that records many
// deliveries at once.
type OutboxDeliverManyTx interface {
	// OutboxMarkDelivered sets delivered (at at) every message of ms that is
	// still pending at the attempt ms says, and returns the ids it set.
	OutboxMarkDelivered(ctx context.Context, ms []OutboxMessage, at time.Time) ([]int64, error)
}

// OutboxLeaseTx is implemented by a driver's Tx that leases many claimed
// messages in one statement.
type OutboxLeaseTx interface {
	// OutboxLease adds an attempt to each of ids and makes it due at until.
	OutboxLease(ctx context.Context, ms []OutboxMessage, until time.Time) error
}

// OutboxBatchReporter records many deliveries in one transaction; found
// with [As].
type OutboxBatchReporter interface {
	// OutboxDeliveredMany records the deliveries of claimed messages, each
	// fenced on the attempt its claim returned, and returns the ids whose
	// claim was stale (another deliverer took them): those are unchanged.
	OutboxDeliveredMany(ctx context.Context, p *OutboxDeliveredManyParams) (stale []int64, err error)
}

// OutboxDeliveredManyParams are the claimed messages that were delivered.
type OutboxDeliveredManyParams struct {
	Messages []OutboxMessage
	Now      *time.Time
}

var errNoHeadsFilter = errors.New("store: this driver cannot claim the outbox of some webhooks only")

// outboxHeads reads the heads a claim may take: through OutboxHeadsOf
// whenever the driver has it, filtered or not, since the drivers' version
// starts its walk at the oldest pending message (docs/outbox.md).
func outboxHeads(ctx context.Context, rt RunTx, t time.Time, p *OutboxClaimParams) ([]OutboxMessage, error) {
	ft, ok := rt.(OutboxHeadsFilterTx)
	switch {
	case ok:
		return ft.OutboxHeadsOf(ctx, t, p.Limit, p.Webhooks, p.SkipWebhooks)
	case len(p.Webhooks) == 0 && len(p.SkipWebhooks) == 0:
		return rt.OutboxHeads(ctx, t, p.Limit)
	}
	return nil, errNoHeadsFilter
}

// OutboxDeliveredMany implements [OutboxBatchReporter]: job messages in one
// statement where the driver can; a run's final status (which also sets
// the run's reported_at) as OutboxDelivered does, in the same transaction.
func (e *engine) OutboxDeliveredMany(ctx context.Context, p *OutboxDeliveredManyParams) ([]int64, error) {
	if len(p.Messages) == 0 {
		return nil, nil
	}
	var stale []int64
	err := e.write(ctx, func(tx Tx, b *batch) error {
		stale = stale[:0]
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		var plain, one []OutboxMessage
		for _, m := range p.Messages {
			if m.Aggregate == AggregateRun && isRunFinal(m.EventType) {
				one = append(one, m)
			} else {
				plain = append(plain, m)
			}
		}
		if dt, ok := tx.(OutboxDeliverManyTx); ok && len(plain) > 0 {
			done, err := dt.OutboxMarkDelivered(ctx, plain, t)
			if err != nil {
				return err
			}
			set := make(map[int64]bool, len(done))
			for _, id := range done {
				set[id] = true
			}
			for _, m := range plain {
				if !set[m.ID] {
					stale = append(stale, m.ID)
				}
			}
		} else {
			one = append(one, plain...)
		}
		for _, m := range one {
			err := e.outboxReportTx(ctx, tx, rt, b, &OutboxReportParams{ID: m.ID, Attempt: m.Attempts}, t, e.delivered)
			switch {
			case errors.Is(err, lifecycle.ErrStaleLease), errors.Is(err, lifecycle.ErrNotFound):
				stale = append(stale, m.ID)
			case err != nil:
				return fmt.Errorf("outbox message %d: %w", m.ID, err)
			}
		}
		return nil
	})
	return stale, err
}
