package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// BatchSender delivers the messages of some webhooks itself, many at once,
// instead of one HTTP request each: the bus bridge publishes them on NATS.
// When the Transport of a Deliverer's Client implements BatchSender, the
// Deliverer claims those webhooks' messages apart, up to BatchLimit at a
// time, hands them over in one call, and records the deliveries in one
// transaction.
type BatchSender interface {
	// Handles reports whether the sender delivers w's messages.
	Handles(w store.Webhook) bool
	// Available reports whether sending may succeed now. While it says no,
	// the sender's messages wait in the outbox unclaimed: no attempt is
	// spent on a receiver known to be away.
	Available() bool
	// SendBatch delivers ms, heads of distinct aggregates of w (so their
	// order does not matter), and returns one error per message: nil when
	// delivered. An error wrapping [ErrUnavailable] says the receiver is
	// away, not that the message is wrong: the message is retried and never
	// dead-lettered for it.
	SendBatch(ctx context.Context, w store.Webhook, ms []store.OutboxMessage) []error
}

// ErrUnavailable marks a delivery that failed because the receiver could
// not be reached: retried with backoff for as long as it takes.
var ErrUnavailable = errors.New("the receiver is unavailable")

// batchHooks knows which webhooks the batch sender handles, and whether
// there are others, read from the store at most once a second.
type batchHooks struct {
	mu     sync.Mutex
	at     time.Time
	ids    []string
	others bool
}

func (d *Deliverer) batchHookIDs(ctx context.Context) (ids []string, others bool, err error) {
	h := &d.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	now := d.cfg.Clock.Now()
	if !h.at.IsZero() && now.Sub(h.at) < time.Second && !now.Before(h.at) {
		return h.ids, h.others, nil
	}
	ws, err := d.store.WebhookList(ctx)
	if err != nil {
		return nil, false, err
	}
	h.ids, h.others = h.ids[:0:0], false
	for _, w := range ws {
		if d.batch.Handles(w) {
			h.ids = append(h.ids, w.ID)
		} else {
			h.others = true
		}
	}
	h.at = now
	return h.ids, h.others, nil
}

// passBatch claims up to BatchLimit messages of the batch sender's
// webhooks, sends them, and records the outcomes: the deliveries in one
// transaction, each failure on its own.
func (d *Deliverer) passBatch(ctx context.Context, ids []string) (int, error) {
	now := d.cfg.Clock.Now()
	ds, err := d.store.OutboxClaim(ctx, &store.OutboxClaimParams{Limit: d.cfg.BatchLimit, Lease: d.cfg.Lease, Now: &now, Webhooks: ids})
	if err != nil || len(ds) == 0 {
		return 0, err
	}
	type group struct {
		w  store.Webhook
		ms []store.OutboxMessage
	}
	var groups []*group
	byHook := map[string]*group{}
	for _, dl := range ds {
		g := byHook[dl.Webhook.ID]
		if g == nil {
			g = &group{w: dl.Webhook}
			byHook[dl.Webhook.ID] = g
			groups = append(groups, g)
		}
		g.ms = append(g.ms, dl.Message)
	}
	var delivered []store.OutboxMessage
	type failure struct {
		m   store.OutboxMessage
		err error
	}
	var failed []failure
	for _, g := range groups {
		errs := d.batch.SendBatch(ctx, g.w, g.ms)
		for i, m := range g.ms {
			var err error
			if i < len(errs) {
				err = errs[i]
			} else {
				err = fmt.Errorf("the batch sender gave no outcome for message %d", m.ID)
			}
			if err == nil {
				delivered = append(delivered, m)
			} else {
				failed = append(failed, failure{m, err})
			}
		}
	}
	if ctx.Err() != nil {
		return len(ds), ctx.Err() // stopping: the lease hands the messages on
	}
	if err := d.recordDelivered(ctx, delivered); err != nil {
		return len(ds), err
	}
	for _, f := range failed {
		if err := d.recordFailed(ctx, f.m, "", f.err, 0); err != nil {
			return len(ds), err
		}
	}
	return len(ds), nil
}

// recordDelivered records deliveries: in one transaction when the store can.
func (d *Deliverer) recordDelivered(ctx context.Context, ms []store.OutboxMessage) error {
	if len(ms) == 0 {
		return nil
	}
	now := d.cfg.Clock.Now()
	if r, ok := store.As[store.OutboxBatchReporter](d.store); ok {
		_, err := r.OutboxDeliveredMany(ctx, &store.OutboxDeliveredManyParams{Messages: ms, Now: &now})
		return err // stale ones were taken by another deliverer, which reports them
	}
	for _, m := range ms {
		err := d.store.OutboxDelivered(ctx, &store.OutboxReportParams{ID: m.ID, Attempt: m.Attempts, Now: &now})
		if err != nil && !errors.Is(err, lifecycle.ErrStaleLease) {
			return err
		}
	}
	return nil
}
