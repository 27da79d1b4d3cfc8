package stats_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestCounterAndHandler counts real jobs in SQLite in the background and
// serves them as the KEDA report.
func TestCounterAndHandler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := stinttest.NewStoreWithClock(t, clk)
	specs := []lifecycle.Spec{{Kind: "a"}, {Kind: "a"}, {Kind: "b", Queue: "mail"}}
	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1, LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c := stats.NewCounter(s, stats.Config{Clock: clk})
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)

	srv := httptest.NewServer(stats.Handler(c, func() (int, int) { return 1, 4 }))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r stats.Report
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Backlog != 2 || r.Running != 1 || r.Queues["default"].Backlog != 2 || r.Queues["mail"].Running != 1 {
		t.Errorf("report: %+v", r)
	}
	if r.Utilisation != 0.25 || r.Capacity != 4 {
		t.Errorf("utilisation %v of %d, want 0.25 of 4", r.Utilisation, r.Capacity)
	}
	if got := r.Queues["default"].OldestAgeSeconds; got != 10 {
		t.Errorf("oldest age %v, want 10", got)
	}
	post, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", post.StatusCode)
	}
}

// TestThroughput: the attempts ended between two counts, per second.
func TestThroughput(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ended := map[string]int64{"mail": 5}
	c := stats.NewCounter(stinttest.NewStoreWithClock(t, clk), stats.Config{Clock: clk,
		Ended: func() map[string]int64 { return map[string]int64{"mail": ended["mail"]} }})
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended["mail"] = 35
	clk.Advance(10 * time.Second)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := stats.BuildReport(c.Snapshot(), nil, clk.Now())
	if got := r.Queues["mail"].Throughput; got != 3 {
		t.Errorf("throughput %v per second, want 3", got)
	}
}
