package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// carrier holds one traceparent for the W3C propagator.
type carrier map[string]string

func (c carrier) Get(key string) string { return c[strings.ToLower(key)] }
func (c carrier) Set(key, value string) { c[strings.ToLower(key)] = value }
func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

var w3c = propagation.TraceContext{}

// Traceparent returns the W3C traceparent of ctx's span ("00-<trace id>-
// <span id>-<flags>"), or "" when ctx carries no valid span.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := carrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// ContextWithTraceparent returns ctx with the remote span of traceparent as
// its parent; ctx unchanged when traceparent is not a valid one.
func ContextWithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, carrier{"traceparent": traceparent})
}

// TraceID returns the trace id a job's trace_id field names: the trace of
// a traceparent, or the field itself when it holds a bare trace id.
func TraceID(field string) string {
	sc := trace.SpanContextFromContext(ContextWithTraceparent(context.Background(), field))
	if sc.IsValid() {
		return sc.TraceID().String()
	}
	return field
}
