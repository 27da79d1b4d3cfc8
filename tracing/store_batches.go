package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stint-dev/stint/store"
)

// JobClaimMany runs a multi-owner claim (a server's dispatcher serving
// several long polls at once) in a "stint.claim" span, as JobClaim.
func (s *traced) JobClaimMany(ctx context.Context, ps []store.JobClaimParams) ([]store.ClaimResult, error) {
	var queues []string
	if len(ps) > 0 {
		queues = ps[0].Queues
	}
	ctx, span := s.tracer().Start(ctx, "stint.claim", trace.WithAttributes(
		attribute.StringSlice("stint.queues", queues), attribute.Int("stint.claims", len(ps))))
	res, err := store.ClaimMany(ctx, s.Store, ps)
	n := 0
	for _, r := range res {
		n += len(r.Jobs)
	}
	span.SetAttributes(attribute.Int("stint.claimed", n))
	end(span, err)
	return res, err
}
