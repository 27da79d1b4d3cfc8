package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/tracing"
)

// lockedBuffer is a log sink the handler's goroutine writes to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTraceFromEnqueueToHandler enqueues inside a span, works the job with
// a real pool on SQLite, and checks with the SDK's in-memory exporter that
// the handler's span is a child of the enqueue, itself a child of the
// caller's span, that claims and completions have spans, and that the
// handler's log line names the job, its attempt and its trace.
func TestTraceFromEnqueueToHandler(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	logs := &lockedBuffer{}
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(logs, nil)))
	s := tracing.Store(stinttest.NewStore(t), tp)
	if _, err := store.TokensOf(s); err != nil {
		t.Errorf("the wrapped store hides the tokens of the store underneath: %v", err)
	}
	mux := stint.NewMux()
	mux.Use(tracing.Middleware(tp))
	mux.HandleFunc("traced", func(ctx context.Context, j *stint.Job) error {
		log.InfoContext(ctx, "working")
		return nil
	})

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: "traced"}}})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	job := res[0].Job
	traceID := caller.SpanContext().TraceID().String()
	if got := tracing.TraceID(job.TraceID); got != traceID {
		t.Fatalf("the job's trace_id %q names trace %q, want the caller's %s", job.TraceID, got, traceID)
	}
	stinttest.Drain(t, s, mux)

	spans := map[string]tracetest.SpanStub{}
	for _, sp := range exp.GetSpans() {
		spans[sp.Name] = sp
	}
	enq, work := spans["stint.enqueue"], spans["stint.work traced"]
	for _, name := range []string{"stint.enqueue", "stint.work traced", "stint.claim", "stint.complete"} {
		if _, ok := spans[name]; !ok {
			t.Errorf("no %q span among %d", name, len(spans))
		}
	}
	if enq.Parent.SpanID() != caller.SpanContext().SpanID() {
		t.Errorf("the enqueue span's parent is %s, want the caller's span", enq.Parent.SpanID())
	}
	if work.Parent.SpanID() != enq.SpanContext.SpanID() || work.SpanContext.TraceID().String() != traceID {
		t.Errorf("the handler's span is not a child of the enqueue span: parent %s trace %s", work.Parent.SpanID(), work.SpanContext.TraceID())
	}
	line := logs.String()
	for _, want := range []string{"job_id=" + job.ID, "attempt=1", "trace_id=" + traceID} {
		if !strings.Contains(line, want) {
			t.Errorf("the handler's log line lacks %q: %s", want, line)
		}
	}
	evs, err := s.JobEvents(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if tracing.TraceID(e.TraceID) != traceID {
			t.Errorf("event %s carries trace_id %q", e.Type, e.TraceID)
		}
	}
	if got, _ := s.JobGet(context.Background(), job.ID); got.State != lifecycle.Succeeded {
		t.Errorf("job ended %s", got.State)
	}
}

// TestEnabled: tracing is off unless the OTEL_* variables ask for it.
func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestTraceID reads a traceparent's trace, and keeps a bare id as it is.
func TestTraceID(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := tracing.TraceID(tp); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID(traceparent) = %q", got)
	}
	if got := tracing.TraceID("my-trace"); got != "my-trace" {
		t.Errorf("TraceID(bare) = %q", got)
	}
}
