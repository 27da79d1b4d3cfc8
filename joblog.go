package stint

import "strings"

// jobLog returns the attributes every log line about an attempt's job
// carries, its id, attempt and trace id, followed by args.
func (a *attempt) jobLog(args ...any) []any {
	rec := a.job.rec
	attrs := []any{"job", rec.ID, "attempt", rec.Attempt}
	if rec.TraceID != "" {
		attrs = append(attrs, "trace_id", traceIDOf(rec.TraceID))
	}
	return append(attrs, args...)
}

// traceIDOf returns the trace id of a W3C traceparent
// ("00-<32 hex>-<16 hex>-<2 hex>", as package tracing stores it in a job's
// trace_id), or s itself when it is not one.
func traceIDOf(s string) string {
	parts := strings.Split(s, "-")
	if len(parts) == 4 && len(parts[1]) == 32 {
		return parts[1]
	}
	return s
}
