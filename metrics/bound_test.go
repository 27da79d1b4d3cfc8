package metrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestTenThousandQueues: 10,000 queues, each with its own kind, on a real
// store. /metrics keeps the deepest 100 queues (the default) with their own
// series, sums the rest under queue="other", leaves out states with no
// jobs, and the counters and histograms by kind and queue keep the first
// 100 values seen and count the rest under "other": nothing is lost, and
// the scrape stays bounded.
func TestTenThousandQueues(t *testing.T) {
	t.Parallel()
	const queues = 10_000
	raw := stinttest.NewStore(t)
	specs := make([]lifecycle.Spec, 0, queues+50)
	for i := range queues {
		specs = append(specs, lifecycle.Spec{Kind: fmt.Sprintf("kind-%05d", i), Queue: fmt.Sprintf("q-%05d", i)})
	}
	// Five deep queues, deepest last, that must keep their own series.
	for i := range 5 {
		for range 2 + i*2 {
			specs = append(specs, lifecycle.Spec{Kind: "deep", Queue: fmt.Sprintf("deep-%d", i)})
		}
	}
	for i := 0; i < len(specs); i += store.MaxBatch {
		if _, err := raw.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs[i:min(i+store.MaxBatch, len(specs))]}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Store(raw)
	// Claim every job of the first 1,000 queues through the instrumented store.
	for i := 0; i < 1000; i += 100 {
		names := make([]string, 100)
		for k := range names {
			names[k] = fmt.Sprintf("q-%05d", i+k)
		}
		jobs, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: names, Limit: 100, LeaseTTL: time.Hour})
		if err != nil || len(jobs) != 100 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
	}
	c := stats.NewCounter(raw, stats.Config{})
	if err := m.Jobs(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}

	series := map[string]int{}
	sums := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
		for _, mt := range mf.GetMetric() {
			sums[mf.GetName()] += mt.GetGauge().GetValue() + mt.GetCounter().GetValue() + float64(mt.GetHistogram().GetSampleCount())
		}
	}
	for name, most := range map[string]int{
		"stint_jobs":                         2 * (metrics.DefaultMaxLabelValues + 1), // queued or claimed, 101 queues
		"stint_queue_oldest_job_age_seconds": metrics.DefaultMaxLabelValues + 1,
		"stint_claims_total":                 metrics.DefaultMaxLabelValues + 1,
		"stint_queue_wait_seconds":           metrics.DefaultMaxLabelValues + 1,
		"stint_jobs_unserved":                metrics.DefaultMaxLabelValues + 1,
	} {
		if got := series[name]; got == 0 || got > most {
			t.Errorf("%s has %d series, want 1 to %d", name, got, most)
		}
	}
	if got, want := sums["stint_jobs"], float64(len(specs)); got != want {
		t.Errorf("stint_jobs sums to %v, want every job (%v)", got, want)
	}
	// Worker w was recorded at its first claim, serving q-00000 to q-00099,
	// all claimed: every queued job waits for a kind no worker serves.
	if got, want := sums["stint_jobs_unserved"], float64(len(specs)-1000); got != want {
		t.Errorf("stint_jobs_unserved sums to %v, want every queued job (%v)", got, want)
	}
	if got := sums["stint_claims_total"]; got != 1000 {
		t.Errorf("stint_claims_total sums to %v, want 1000", got)
	}
	if got := sums["stint_queue_wait_seconds"]; got != 1000 {
		t.Errorf("stint_queue_wait_seconds counts %v samples, want 1000", got)
	}
	for _, want := range []string{
		`stint_jobs{queue="deep-4",state="queued"} 10`,
		`stint_jobs{queue="deep-0",state="queued"} 2`,
		`stint_claims_total{kind="other",queue="other"} 900`,
		`stint_jobs_unserved{kind="deep",queue="deep-4"} 10`,
	} {
		if !strings.Contains(text(t, reg), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text(t, reg), `state="blocked"`) {
		t.Error("a state with no jobs has a series")
	}
}

// TestMaxLabelValues: the bound is configurable.
func TestMaxLabelValues(t *testing.T) {
	t.Parallel()
	raw := stinttest.NewStore(t)
	var specs []lifecycle.Spec
	for i := range 10 {
		specs = append(specs, lifecycle.Spec{Kind: "k", Queue: fmt.Sprintf("q%d", i)})
	}
	specs = append(specs, lifecycle.Spec{Kind: "k", Queue: "other"}) // a queue literally named other
	if _, err := raw.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.MaxLabelValues(3))
	if err != nil {
		t.Fatal(err)
	}
	c := stats.NewCounter(raw, stats.Config{})
	if err := m.Jobs(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	body := text(t, reg)
	if n := strings.Count(body, "stint_jobs{"); n != 4 {
		t.Errorf("stint_jobs has %d series, want 3 queues and other:\n%s", n, body)
	}
	if !strings.Contains(body, `stint_jobs{queue="other",state="queued"} 8`) {
		t.Errorf("other does not sum the 7 queues beyond the bound and the queue named other:\n%s", body)
	}
}

// text renders reg as a scrape would.
func text(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			b.WriteString(mf.GetName() + "{")
			for i, l := range mt.GetLabel() {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s=%q", l.GetName(), l.GetValue())
			}
			fmt.Fprintf(&b, "} %v\n", mt.GetGauge().GetValue()+mt.GetCounter().GetValue())
		}
	}
	return b.String()
}
