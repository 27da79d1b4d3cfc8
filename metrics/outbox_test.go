package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestOutboxDeliveries delivers one event to three real receivers (one
// accepts, one fails for now, one refuses for good) through an instrumented
// SQLite store and reads stint_outbox_deliveries_total from a real registry.
func TestOutboxDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Store(stinttest.NewStore(t))
	for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable, http.StatusBadRequest} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
		t.Cleanup(srv.Close)
		if _, err := s.WebhookAdd(ctx, store.Webhook{URL: srv.URL, Secret: "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
			EventTypes: []string{"succeeded"}}); err != nil {
			t.Fatal(err)
		}
	}
	mux := stint.NewMux()
	mux.HandleFunc("ok", func(context.Context, *stint.Job) error { return nil })
	if j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "ok"}); j.State != lifecycle.Succeeded {
		t.Fatalf("ok job ended %s", j.State)
	}
	d, err := outbox.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Pass(ctx); err != nil || n != 3 {
		t.Fatalf("Pass: %d messages, %v; want 3", n, err)
	}
	for _, result := range []string{"delivered", "failed", "dead"} {
		if got := testutil.ToFloat64(mustVec(t, reg, "stint_outbox_deliveries_total", "result", result)); got != 1 {
			t.Errorf("stint_outbox_deliveries_total{result=%q} = %v, want 1", result, got)
		}
	}
}
