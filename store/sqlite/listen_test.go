package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// twoStores opens two stores on one file, as two processes would.
func twoStores(t *testing.T) (a, b store.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stint.db")
	for _, s := range []*store.Store{&a, &b} {
		var err error
		if *s, err = sqlite.OpenStore(t.Context(), path, sqlite.Options{NoticePoll: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		st := *s
		t.Cleanup(func() { st.Close() })
	}
	return a, b
}

// await waits for want on ch, ignoring other values, for up to 10 s.
func await(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no notice %q from the other store", want)
		}
	}
}

// TestEnqueueWakesAnotherStore: a job enqueued through one store wakes the
// claimers of another store on the same file (another process).
func TestEnqueueWakesAnotherStore(t *testing.T) {
	a, b := twoStores(t)
	wake, stop := b.Wakeups()
	defer stop()
	if _, err := a.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k", Queue: "far"}}}); err != nil {
		t.Fatal(err)
	}
	await(t, wake, "far")
}

// TestCancelReachesTheOwnerInAnotherStore: a cancel of a running job
// through one store delivers the job's id on the LeaseNotices of the store
// whose worker owns it (issue 13 item 1: not at its next heartbeat).
func TestCancelReachesTheOwnerInAnotherStore(t *testing.T) {
	a, b := twoStores(t)
	ctx := t.Context()
	if _, err := b.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k", Queue: "q"}}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	leases, stop := b.LeaseNotices()
	defer stop()
	if _, err := a.JobCancel(ctx, &store.JobCancelParams{JobID: jobs[0].ID, Reason: "from another process"}); err != nil {
		t.Fatal(err)
	}
	await(t, leases, jobs[0].ID)
}

// TestListenStopsWithItsContext: Listen returns once its context ends.
func TestListenStopsWithItsContext(t *testing.T) {
	d, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{NoticePoll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Listen(ctx, func(store.Notice) {}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Listen: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Listen still polling after its context ended")
	}
}
