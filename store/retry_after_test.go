package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestRetryAfterUsesTheStoreClock: a worker whose clock is ten minutes
// ahead of the store's (or behind it) asks for a retry in 2 s; the job is
// due 2 s after the failure by the store's clock (issue 7).
func TestRetryAfterUsesTheStoreClock(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		storeNow := time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)
		storeClock := clock.NewManual(storeNow)
		s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Clock: storeClock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ctx := t.Context()
		if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k", Queue: "q"}}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Hour, Start: true})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		workerNow := storeNow.Add(skew)
		// What a worker that resolved the delay itself would have asked for.
		wrong := workerNow.Add(2 * time.Second)
		j, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
			Error: lifecycle.JobError{Code: "busy", Message: "retry later"}, RetryAfter: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if want := storeNow.Add(2 * time.Second); !j.RunAt.Equal(want) {
			t.Errorf("worker clock %+v off: run_at %s, want %s by the store's clock (not %s)", skew, j.RunAt, want, wrong)
		}
	}
}
