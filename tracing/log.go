package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// JobInfo is the job a context is about, for log lines.
type JobInfo struct {
	ID      string
	Attempt int
	Kind    string
	// TraceID is the job's trace (its trace_id field's trace).
	TraceID string
}

type jobKey struct{}

// WithJob returns ctx about job j: [LogHandler] adds it to every record
// logged with ctx. [Middleware] does this for each attempt.
func WithJob(ctx context.Context, j JobInfo) context.Context {
	return context.WithValue(ctx, jobKey{}, j)
}

// JobOf returns the job ctx is about, if any.
func JobOf(ctx context.Context) (JobInfo, bool) {
	j, ok := ctx.Value(jobKey{}).(JobInfo)
	return j, ok
}

// LogHandler wraps h so that each record logged with a context about a job
// (see [WithJob]) carries job_id, attempt and trace_id, and one logged
// inside any span carries its trace_id and span_id.
func LogHandler(h slog.Handler) slog.Handler { return &logHandler{h} }

type logHandler struct{ slog.Handler }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := trace.SpanContextFromContext(ctx)
	if j, ok := JobOf(ctx); ok {
		r.AddAttrs(slog.String("job_id", j.ID), slog.Int("attempt", j.Attempt))
		if j.TraceID != "" && !sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", j.TraceID))
		}
	}
	if sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{h.Handler.WithAttrs(as)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h.Handler.WithGroup(name)}
}
