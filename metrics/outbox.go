package metrics

import (
	"context"

	"github.com/stint-dev/stint/store"
)

// The results of stint_outbox_deliveries_total.
const (
	outboxDelivered = "delivered"
	outboxFailed    = "failed"
	outboxDead      = "dead"
)

// OutboxDelivered counts a delivery the store recorded. The deliverer
// reports every attempt through its store, so counting here needs no hook
// in package outbox: give the deliverer the wrapped store.
func (s *instrumented) OutboxDelivered(ctx context.Context, p *store.OutboxReportParams) error {
	err := s.Store.OutboxDelivered(ctx, p)
	if err == nil {
		s.m.outbox.WithLabelValues(outboxDelivered).Inc()
	} else {
		s.m.refused("outbox_delivered", err)
	}
	return err
}

// OutboxFailed counts a failed attempt: dead when it dead-lettered the
// message, failed when it will be retried.
func (s *instrumented) OutboxFailed(ctx context.Context, p *store.OutboxReportParams) error {
	err := s.Store.OutboxFailed(ctx, p)
	switch {
	case err != nil:
		s.m.refused("outbox_failed", err)
	case p.Dead:
		s.m.outbox.WithLabelValues(outboxDead).Inc()
	default:
		s.m.outbox.WithLabelValues(outboxFailed).Inc()
	}
	return err
}
