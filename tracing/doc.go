// Package tracing carries OpenTelemetry traces through stint jobs and puts
// the job on every log line about it.
//
// [Store] wraps a store: an enqueue captures the caller's W3C trace context
// into the job (its trace_id field keeps the traceparent, so the job's
// events carry it too), and claims and completions get spans of their own.
// [Middleware] runs each attempt in a span that is a child of the
// enqueuer's, whatever process or machine enqueued it, and puts the job on
// the context for [LogHandler], which adds job_id, attempt and trace_id to
// every slog record logged with that context. [FromEnv] builds an OTLP
// exporter from the standard OTEL_* environment variables; tracing is off
// unless they ask for it.
package tracing
