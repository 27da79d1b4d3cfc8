package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestStoreCountsAttempts works real jobs through a pool on an instrumented
// SQLite store and reads the counters back from a real registry.
func TestStoreCountsAttempts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	raw := stinttest.NewStore(t)
	s := m.Store(raw)
	if _, err := store.TokensOf(s); err != nil {
		t.Errorf("the wrapped store hides the tokens of the store underneath: %v", err)
	}
	mux := stint.NewMux()
	mux.HandleFunc("ok", func(context.Context, *stint.Job) error { return nil })
	mux.HandleFunc("flaky", func(context.Context, *stint.Job) error { return errors.New("boom") })
	mux.HandleFunc("doomed", func(context.Context, *stint.Job) error {
		return stint.DeadLetter(stint.ReasonParseError, errors.New("cannot parse"))
	})

	if j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "ok"}); j.State != lifecycle.Succeeded {
		t.Fatalf("ok job ended %s", j.State)
	}
	if j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "flaky", MaxAttempts: 3}); j.State != lifecycle.Retrying {
		t.Fatalf("flaky job ended %s", j.State)
	}
	if j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "doomed"}); j.State != lifecycle.DeadLettered {
		t.Fatalf("doomed job ended %s", j.State)
	}

	for _, c := range []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"claims ok", mustVec(t, reg, "stint_claims_total", "kind", "ok"), 1},
		{"failures flaky", mustVec(t, reg, "stint_failures_total", "kind", "flaky"), 1},
		{"retries flaky", mustVec(t, reg, "stint_retries_total", "kind", "flaky"), 1},
		{"dead letters doomed", mustVec(t, reg, "stint_dead_lettered_total", "kind", "doomed"), 1},
		{"succeeded ok", mustVec(t, reg, "stint_completions_total", "state", "succeeded"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := testutil.ToFloat64(c.got); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	if n := testutil.CollectAndCount(reg, "stint_run_seconds"); n != 3 {
		t.Errorf("stint_run_seconds has %d series, want one per kind (3)", n)
	}
	if n := testutil.CollectAndCount(reg, "stint_queue_wait_seconds"); n != 3 {
		t.Errorf("stint_queue_wait_seconds has %d series, want 3", n)
	}

	// The jobs by queue and state come from the counter's snapshot.
	c := stats.NewCounter(raw, stats.Config{})
	if err := m.Jobs(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Pool("test", func() (int, int) { return 3, 4 }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	body := scrape(t, srv.URL)
	for _, want := range []string{
		`stint_jobs{queue="default",state="dead_lettered"} 1`,
		`stint_jobs{queue="default",state="retrying"} 1`,
		`stint_pool_utilisation{pool="test"} 0.75`,
		`stint_lease_expiries_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

// TestNewRefusesTwice: the collectors register once per registry.
func TestNewRefusesTwice(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Error("a second New on the same registry succeeded")
	}
}

// mustVec finds the series of name whose label has value, summed over other labels.
func mustVec(t *testing.T, reg *prometheus.Registry, name, label, value string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sum"}, func() float64 { return sum })
}
