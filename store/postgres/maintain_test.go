package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

func TestLeaderElection(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Options{})
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	elect := func(id string, now *time.Time) store.Leadership {
		t.Helper()
		l, err := s.LeaderElect(ctx, &store.LeaderElectParams{Name: "maintenance", ID: id, TTL: 10 * time.Second, Now: now})
		if err != nil {
			t.Fatalf("elect %s: %v", id, err)
		}
		return l
	}
	steps := []struct {
		name   string
		do     func() store.Leadership
		won    bool
		term   int64
		expiry *time.Time
	}{
		{"a takes the free seat", func() store.Leadership { return elect("a", at(0)) }, true, 1, at(10 * time.Second)},
		{"b is refused while a holds it", func() store.Leadership { return elect("b", at(5*time.Second)) }, false, 0, nil},
		{"a renews in the same term", func() store.Leadership { return elect("a", at(8*time.Second)) }, true, 1, at(18 * time.Second)},
		{"b takes the expired seat in a new term", func() store.Leadership { return elect("b", at(18*time.Second)) }, true, 2, at(28 * time.Second)},
		{"a, deposed, is refused", func() store.Leadership { return elect("a", at(19*time.Second)) }, false, 0, nil},
		{"after b resigns, a takes it in a new term", func() store.Leadership {
			if err := s.LeaderResign(ctx, "maintenance", "b"); err != nil {
				t.Fatal(err)
			}
			return elect("a", at(20*time.Second))
		}, true, 3, at(30 * time.Second)},
	}
	// The steps share one seat, so they run in order.
	for _, st := range steps {
		l := st.do()
		if l.Elected != st.won || l.Term != st.term || (st.expiry != nil && !l.ExpiresAt.Equal(*st.expiry)) {
			t.Fatalf("%s: got %+v; want elected %v, term %d, expiry %v", st.name, l, st.won, st.term, st.expiry)
		}
	}
}

// Of many candidates racing for a free seat, exactly one wins.
func TestLeaderElectionRace(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Options{})
	ctx := context.Background()
	const n = 16
	won := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l, err := s.LeaderElect(ctx, &store.LeaderElectParams{Name: "seat", ID: fmt.Sprint("c", i), TTL: time.Minute})
			won[i], errs[i] = l.Elected, err
		})
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("candidate %d: %v", i, errs[i])
		}
		if won[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d candidates won the seat, want 1", winners)
	}
}

// Retention deletes finished jobs (their events leave with them, and the
// disk with their partition: see partitions_test.go) and no heartbeat row by
// row; the log that remains still verifies.
func TestRetention(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Options{})
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }

	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs(3, "q"), Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 3, LeaseTTL: time.Hour, Start: true, Now: at(time.Second)})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim: %v, %d jobs", err, len(jobs))
	}
	// The first job finishes early, the second late; the third keeps running
	// and heartbeating.
	for i, d := range []time.Duration{time.Minute, time.Hour} {
		res, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: jobs[i].ID, LeaseID: jobs[i].LeaseID, Now: at(d)}, Result: []byte(`1`)}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("complete: %v %v", err, res[0].Err)
		}
	}
	for i := range 3 {
		hb := &store.JobHeartbeatParams{OwnerParams: store.OwnerParams{JobID: jobs[2].ID, LeaseID: jobs[2].LeaseID, Now: at(time.Duration(i+2) * time.Second)}, LeaseTTL: time.Hour}
		if _, err := s.JobHeartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
	}

	got, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(30 * time.Minute), HeartbeatsBefore: *at(4 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.RetainResult{Jobs: 1, Events: 4, Heartbeats: 0}); got != want {
		t.Errorf("retain: %+v, want %+v", got, want)
	}
	if _, err := s.JobGet(ctx, jobs[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the job finished early: %v; want it deleted", err)
	}
	if _, err := s.JobProvenance(ctx, jobs[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("its provenance: %v; want it deleted", err)
	}
	if _, err := s.JobGet(ctx, jobs[1].ID); err != nil {
		t.Errorf("the job finished late: %v; want it kept", err)
	}
	if rep := verifyClean(t, s); rep.Jobs != 2 {
		t.Errorf("verify saw %d jobs, want 2", rep.Jobs)
	}
}
