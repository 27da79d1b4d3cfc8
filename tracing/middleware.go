package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stint-dev/stint"
)

func provider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}

// Middleware runs each attempt in a "stint.work <kind>" consumer span whose
// parent is the span that enqueued the job (from its traceparent), and puts
// the job on the context for [LogHandler]. tp nil means
// otel.GetTracerProvider() at each attempt.
func Middleware(tp trace.TracerProvider) stint.Middleware {
	return func(next stint.Handler) stint.Handler {
		return stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			rec := j.Record()
			ctx = ContextWithTraceparent(ctx, rec.TraceID)
			ctx, span := provider(tp).Tracer(instrumentation).Start(ctx, "stint.work "+rec.Kind,
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("stint.job.id", rec.ID), attribute.String("stint.job.kind", rec.Kind),
					attribute.String("stint.job.queue", rec.Queue), attribute.Int("stint.job.attempt", rec.Attempt),
					attribute.String("stint.correlation_id", rec.CorrelationID)))
			ctx = WithJob(ctx, JobInfo{ID: rec.ID, Attempt: rec.Attempt, Kind: rec.Kind, TraceID: TraceID(rec.TraceID)})
			err := next.Work(ctx, j)
			end(span, err)
			return err
		})
	}
}
