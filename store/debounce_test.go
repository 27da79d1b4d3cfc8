package store_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

func TestDebounce(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			d, err := store.Debounce(s)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
			enq := func(n int, at time.Time) store.DebounceResult {
				t.Helper()
				r, err := d.JobDebounce(ctx, &store.JobDebounceParams{Key: "doc-7", Delay: 10 * time.Second, MaxWait: 25 * time.Second,
					Spec: lifecycle.Spec{Kind: "reindex", Tenant: "acme", Payload: json.RawMessage(fmt.Sprint(n))}, Now: &at})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			r1 := enq(1, t0)
			r2 := enq(2, t0.Add(5*time.Second))
			if r2.Replaced != r1.Job.ID || string(r2.Job.Payload) != "2" || !r2.Job.RunAt.Equal(t0.Add(15*time.Second)) {
				t.Fatalf("second enqueue %+v: want it to replace the first, run at +15s with payload 2", r2)
			}
			r3 := enq(3, t0.Add(20*time.Second))
			if r3.Replaced != r2.Job.ID || !r3.Job.RunAt.Equal(t0.Add(25*time.Second)) {
				t.Fatalf("third enqueue runs at %s, want the max wait (+25s)", r3.Job.RunAt)
			}
			first, err := s.JobGet(ctx, r1.Job.ID)
			if err != nil || first.State != lifecycle.Cancelled {
				t.Fatalf("replaced job %s (%v), want cancelled", first.State, err)
			}
			// Once the job is claimed, a debounce returns it and changes nothing.
			at := t0.Add(30 * time.Second)
			if _, err := s.JobPromoteDue(ctx, &store.MaintainParams{Limit: 10, Now: &at}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"default"}, Limit: 1, LeaseTTL: time.Minute, Now: &at}); err != nil {
				t.Fatal(err)
			}
			r4 := enq(4, at)
			if !r4.Existing || r4.Job.ID != r3.Job.ID {
				t.Fatalf("debounce of a claimed key %+v: want the claimed job back", r4)
			}
			live, err := s.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.Scheduled, lifecycle.Queued, lifecycle.Claimed}})
			if err != nil || len(live) != 1 {
				t.Fatalf("%d live jobs (%v), want 1", len(live), err)
			}
			verifyClean(t, s)
		})
	}
}

// TestDebounceConcurrent: several stores on one database (as several
// processes) debounce the same keys at once; each key ends with exactly one
// live job, and every other job of the key was replaced.
func TestDebounceConcurrent(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) func() store.Store{
		"sqlite": func(t *testing.T) func() store.Store {
			path := filepath.Join(t.TempDir(), "stint.db")
			return func() store.Store {
				s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
		"postgres": func(t *testing.T) func() store.Store {
			schema := pgtest.NewSchema(t)
			return func() store.Store {
				s, err := postgres.OpenStore(t.Context(), pgtest.URL(t), postgres.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			next := open(t)
			const procs, each, keys = 3, 20, 2
			stores := make([]store.Store, procs)
			for i := range stores {
				stores[i] = next()
			}
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Go(func() {
					d, _ := store.Debounce(s)
					for n := range each {
						r, err := d.JobDebounce(t.Context(), &store.JobDebounceParams{Key: fmt.Sprint("k", n%keys), Delay: time.Hour,
							Spec: lifecycle.Spec{Kind: "k", Payload: json.RawMessage(fmt.Sprint(i*each + n))}})
						if err != nil {
							t.Error(err)
							return
						}
						if r.Existing || r.Job.Payload == nil || string(r.Job.Payload) != fmt.Sprint(i*each+n) {
							t.Errorf("debounce %d of store %d returned %+v", n, i, r)
						}
					}
				})
			}
			wg.Wait()
			all, err := stores[0].JobList(t.Context(), &store.JobListParams{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			live := map[string]int{}
			for _, j := range all {
				if !j.State.Terminal() {
					live[j.DedupeKey]++
				} else if j.State != lifecycle.Cancelled {
					t.Fatalf("job %s is %s", j.ID, j.State)
				}
			}
			if len(all) != procs*each || len(live) != keys || live["debounce:k0"] != 1 || live["debounce:k1"] != 1 {
				t.Fatalf("%d jobs, live per key %v: want %d jobs and one live per key", len(all), live, procs*each)
			}
			verifyClean(t, stores[0])
		})
	}
}
