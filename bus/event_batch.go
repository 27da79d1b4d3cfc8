package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// The bridge's transport is the outbox deliverer's batch sender: the
// deliverer hands it every message of the bridge's webhook, up to its
// BatchLimit at a time, and records the deliveries in one transaction.
var _ outbox.BatchSender = (*transport)(nil)

// eventReaders bounds the job reads of one batch (a terminal event reads
// its job for the result).
const eventReaders = 8

// publishWait bounds the wait for a batch's publish acknowledgements.
const publishWait = 10 * time.Second

// Handles reports whether w is this bridge's outbox subscription.
func (t *transport) Handles(w store.Webhook) bool { return w.URL == WebhookURL(t.b.cfg.Name) }

// Available reports whether the bus is reachable: while it is not, the
// events wait in the outbox and spend no attempts.
func (t *transport) Available() bool { return t.b.connected() }

// SendBatch publishes the events of ms at once (asynchronously, each with
// its Nats-Msg-Id) and waits for JetStream's acknowledgements: a message is
// delivered only once the stream stored it. A publish that fails is
// retried by the outbox and never dead-lettered (outbox.ErrUnavailable).
func (t *transport) SendBatch(ctx context.Context, _ store.Webhook, ms []store.OutboxMessage) []error {
	b := t.b
	errs := make([]error, len(ms))
	evs := make([]outEvent, len(ms))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(eventReaders, len(ms)) {
		wg.Go(func() {
			for i := range next {
				evs[i], errs[i] = b.eventMsg(ctx, ms[i].Payload)
				if errs[i] != nil && !errors.Is(errs[i], errUnreadable) {
					errs[i] = fmt.Errorf("%w: %v", outbox.ErrUnavailable, errs[i])
				}
			}
		})
	}
	for i := range ms {
		next <- i
	}
	close(next)
	wg.Wait()
	futures := make([]jetstream.PubAckFuture, len(ms))
	for i, e := range evs {
		if errs[i] != nil || e.msg == nil {
			continue
		}
		if !b.connected() {
			errs[i] = fmt.Errorf("%w: %v", outbox.ErrUnavailable, errAway)
			continue
		}
		var f jetstream.PubAckFuture
		var err error
		if b.publishHook != nil {
			err = b.publishHook(e.id)
		}
		if err == nil {
			f, err = b.js.PublishMsgAsync(e.msg, jetstream.WithMsgID(e.id))
		}
		if err != nil {
			errs[i] = fmt.Errorf("%w: publish event: %v", outbox.ErrUnavailable, err)
			continue
		}
		futures[i] = f
	}
	deadline, expired := b.cfg.Clock.After(publishWait), false
	for i, f := range futures {
		if f == nil {
			continue
		}
		var err error
		if expired { // the rest get no more time: only what is already in
			select {
			case <-f.Ok():
			case err = <-f.Err():
			default:
				err = fmt.Errorf("no publish acknowledgement within %s", publishWait)
			}
		} else {
			select {
			case <-f.Ok():
			case err = <-f.Err():
			case <-ctx.Done():
				err = ctx.Err()
			case <-deadline:
				expired = true
				err = fmt.Errorf("no publish acknowledgement within %s", publishWait)
			}
		}
		switch {
		case err == nil:
			b.eventPublished(evs[i])
		case ctx.Err() != nil:
			errs[i] = ctx.Err()
		default:
			errs[i] = fmt.Errorf("%w: publish event: %v", outbox.ErrUnavailable, err)
		}
	}
	return errs
}
