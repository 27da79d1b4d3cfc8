package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestBatchOpsAreCounted: claims a server's dispatcher makes for several
// long polls at once and batched heartbeats, found through the wrapper with
// store.As, count as their single forms do.
func TestBatchOpsAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Store(stinttest.NewStore(t))
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k", Queue: "q"}, {Kind: "k", Queue: "q"}, {Kind: "k", Queue: "q"}}}); err != nil {
		t.Fatal(err)
	}
	cm, ok := store.As[store.ClaimManyStore](s)
	if !ok {
		t.Fatal("the instrumented store has no JobClaimMany")
	}
	claim := func(w string) store.JobClaimParams {
		return store.JobClaimParams{WorkerID: w, Queues: []string{"q"}, Limit: 2, LeaseTTL: time.Minute, Start: true}
	}
	res, err := cm.JobClaimMany(t.Context(), []store.JobClaimParams{claim("a"), claim("b")})
	if err != nil || len(res[0].Jobs)+len(res[1].Jobs) != 3 {
		t.Fatalf("JobClaimMany: %+v, %v", res, err)
	}
	hm, ok := store.As[store.HeartbeatManyStore](s)
	if !ok {
		t.Fatal("the instrumented store has no JobHeartbeatMany")
	}
	var beats []store.JobHeartbeatParams
	for _, r := range res {
		for _, j := range r.Jobs {
			beats = append(beats, store.JobHeartbeatParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, LeaseTTL: time.Minute})
		}
	}
	beats[0].LeaseID = "stale"
	if _, err := hm.JobHeartbeatMany(t.Context(), beats); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, metric, label, value string
		want                       float64
	}{
		{"claims", "stint_claims_total", "kind", "k", 3},
		{"renewals", "stint_lease_renewals_total", "kind", "k", 2},
		{"stale", "stint_stale_lease_rejections_total", "op", "heartbeat", 1},
	} {
		if got := testutil.ToFloat64(mustVec(t, reg, c.metric, c.label, c.value)); got != c.want {
			t.Errorf("%s: %s = %v, want %v", c.name, c.metric, got, c.want)
		}
	}
}
