package dashboard_test

import (
	"net/http"
	"slices"
	"testing"
)

type historyAnswer struct {
	StepSeconds int      `json:"step_seconds"`
	Queues      []string `json:"queues"`
	Times       []int64  `json:"times"`
	Depth       []int    `json:"depth"`
	Dead        []float64
	PickupP50   []*float64 `json:"pickup_p50"`
	RunP99      []*float64 `json:"run_p99"`
	Totals      struct {
		Succeeded int `json:"succeeded"`
		Dead      int `json:"dead_lettered"`
	} `json:"totals"`
}

// TestHistory reads the charts' data from the job events of real jobs:
// the fixture's two dead letters and its queued job, per window and
// queue, seen by each tenant.
func TestHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	admin := f.tokens["admin"]
	var hour historyAnswer
	if code := f.call(t, "GET", "api/history?window=hour", admin, "", &hour); code != http.StatusOK {
		t.Fatalf("history: %d", code)
	}
	if hour.StepSeconds != 60 || len(hour.Times) != 60 || len(hour.Depth) != 60 {
		t.Errorf("an hour: step %ds, %d times, %d depths; want 60 one-minute steps", hour.StepSeconds, len(hour.Times), len(hour.Depth))
	}
	if hour.Totals.Dead != 2 || !slices.Contains(hour.Queues, "default") || !slices.Contains(hour.Queues, "other") {
		t.Errorf("an hour: %+v, want 2 dead letters in default, and queue other", hour)
	}
	// Each dead letter was claimed: some step has a pickup latency, some a run time.
	if !slices.ContainsFunc(hour.PickupP50, func(p *float64) bool { return p != nil }) ||
		!slices.ContainsFunc(hour.RunP99, func(p *float64) bool { return p != nil }) {
		t.Errorf("an hour: no pickup or run time in %+v", hour)
	}
	var other historyAnswer
	f.call(t, "GET", "api/history?window=day&queue=other", admin, "", &other)
	if len(other.Times) != 96 || other.Depth[len(other.Depth)-1] != 1 || other.Totals.Dead != 0 {
		t.Errorf("a day of queue other: %d steps, depth %v, %d dead; want 96 steps ending at depth 1, none dead",
			len(other.Times), other.Depth[len(other.Depth)-1:], other.Totals.Dead)
	}
	var acme historyAnswer
	f.call(t, "GET", "api/history", f.tokens["acme"], "", &acme)
	if len(acme.Queues) != 0 || acme.Totals.Dead != 0 {
		t.Errorf("tenant acme sees %+v: another tenant's history", acme)
	}
	for path, want := range map[string]int{
		"api/history?window=week":        http.StatusBadRequest,
		"api/history?queue=acme/q":       http.StatusNotFound,
		"api/history?queue=" + long(300): http.StatusNotFound,
	} {
		if code := f.call(t, "GET", path, admin, "", nil); code != want {
			t.Errorf("GET %.60s: %d, want %d", path, code, want)
		}
	}
	if code := f.call(t, "GET", "api/history", f.tokens["worker"], "", nil); code != http.StatusForbidden {
		t.Errorf("a worker token: %d, want 403", code)
	}
}

func long(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}
