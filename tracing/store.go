package tracing

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stint-dev/stint/store"
)

// instrumentation names stint's tracer.
const instrumentation = "github.com/stint-dev/stint/tracing"

// Store wraps s: JobEnqueue runs in a "stint.enqueue" span and stores its
// traceparent in each new job's trace_id (a spec that names a trace_id
// keeps its own), and claims and completions run in "stint.claim" and
// "stint.complete" spans. tp nil means otel.GetTracerProvider() at each call.
// The optional capabilities of s (tokens, queue controls, schedules) stay
// reachable through Unwrap (see store.As).
func Store(s store.Store, tp trace.TracerProvider) store.Store {
	return &traced{Store: s, tp: tp}
}

type traced struct {
	store.Store
	tp trace.TracerProvider
}

// Unwrap returns the store underneath.
func (s *traced) Unwrap() store.Store { return s.Store }

func (s *traced) tracer() trace.Tracer { return provider(s.tp).Tracer(instrumentation) }

// end records err on span and ends it.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (s *traced) JobEnqueue(ctx context.Context, p *store.JobEnqueueParams) ([]store.EnqueueResult, error) {
	ctx, span := s.tracer().Start(ctx, "stint.enqueue", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("stint.jobs", len(p.Jobs))))
	if tp := Traceparent(ctx); tp != "" {
		q := *p
		q.Jobs = slices.Clone(p.Jobs)
		for i := range q.Jobs {
			if q.Jobs[i].TraceID == "" {
				q.Jobs[i].TraceID = tp
			}
		}
		p = &q
	}
	res, err := s.Store.JobEnqueue(ctx, p)
	if len(res) == 1 {
		span.SetAttributes(attribute.String("stint.job.id", res[0].Job.ID), attribute.String("stint.job.kind", res[0].Job.Kind))
	}
	end(span, err)
	return res, err
}

func (s *traced) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	ctx, span := s.tracer().Start(ctx, "stint.claim", trace.WithAttributes(
		attribute.StringSlice("stint.queues", p.Queues), attribute.Int("stint.limit", p.Limit)))
	jobs, err := s.Store.JobClaim(ctx, p)
	span.SetAttributes(attribute.Int("stint.claimed", len(jobs)))
	end(span, err)
	return jobs, err
}

func (s *traced) JobComplete(ctx context.Context, p []store.JobCompleteParams) ([]store.Result, error) {
	ctx, span := s.tracer().Start(ctx, "stint.complete", trace.WithAttributes(attribute.Int("stint.jobs", len(p))))
	// Each completed job's own trace gets a link, so its trace shows when
	// the result was written.
	res, err := s.Store.JobComplete(ctx, p)
	for _, r := range res {
		if r.Err == nil {
			if sc := trace.SpanContextFromContext(ContextWithTraceparent(context.Background(), r.Job.TraceID)); sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("stint.job.id", r.Job.ID)}})
			}
		}
	}
	end(span, err)
	return res, err
}
