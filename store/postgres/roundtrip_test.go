package postgres_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// The hot path (claim with start of a batch, complete of a batch, fail with
// retry) is one transaction of at most two round trips each.
func TestHotPathRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var rt postgres.RoundTrips
	d := pgtest.NewDriver(t, postgres.WithRoundTrips(postgres.Options{}, &rt))
	s := store.New(d, store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	enqueue(t, s, 20, "q")

	// measure runs op and returns the round trips it took, after one
	// warm-up so that statement preparation is not counted.
	measure := func(what string, op func() error) {
		t.Helper()
		before := rt.N()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := rt.N() - before; n > 2 || n < 1 {
			t.Errorf("%s took %d round trips, want 1 or 2", what, n)
		}
	}
	var jobs []store.Job
	claim := func() error {
		var err error
		jobs, err = s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 5, LeaseTTL: time.Minute, Start: true})
		if err == nil && len(jobs) != 5 {
			t.Fatalf("claimed %d jobs, want 5", len(jobs))
		}
		return err
	}
	complete := func() error {
		ps := make([]store.JobCompleteParams, len(jobs))
		for i, j := range jobs {
			ps[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: []byte(`{"ok":true}`)}
		}
		res, err := s.JobComplete(ctx, ps)
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("complete: %v", r.Err)
			}
		}
		return err
	}
	fail := func() error {
		_, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
			Error: lifecycle.JobError{Code: "network", Message: "reset"}})
		return err
	}
	// Warm up: the first use of each statement on a connection prepares it.
	if err := claim(); err != nil {
		t.Fatal(err)
	}
	if err := complete(); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatal(err)
	}
	if err := fail(); err != nil {
		t.Fatal(err)
	}
	measure("claim with start of 5 jobs", claim)
	measure("complete of 5 jobs", complete)
	measure("claim with start of 5 jobs", claim)
	measure("fail with retry", fail)
}
