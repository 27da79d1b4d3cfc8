package metrics_test

import (
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

// TestUnservedKinds: queued jobs of a kind no live worker handles are a
// series of stint_jobs_unserved; kinds a worker claims are not.
func TestUnservedKinds(t *testing.T) {
	t.Parallel()
	s := stinttest.NewStore(t)
	specs := []lifecycle.Spec{{Kind: "a", Queue: "q"}, {Kind: "a", Queue: "q"}, {Kind: "b", Queue: "q"}, {Kind: "b", Queue: "q"}, {Kind: "a", Queue: "r"}}
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	// A worker of kind a in queue q claims one: a in q is served.
	if _, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Kinds: []string{"a"}, Limit: 1, LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := stats.NewCounter(s, stats.Config{})
	if err := m.Jobs(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	body := text(t, reg)
	for _, want := range []string{`stint_jobs_unserved{kind="b",queue="q"} 2`, `stint_jobs_unserved{kind="a",queue="r"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `stint_jobs_unserved{kind="a",queue="q"}`) {
		t.Error("kind a in queue q has an unserved series, though a worker claims it")
	}
	if got := c.Snapshot().Unserved; len(got) != 2 {
		t.Errorf("the snapshot's unserved kinds %+v, want b in q and a in r", got)
	}
}
