package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

func enqueueN(t *testing.T, s store.Store, queue string, n int) {
	t.Helper()
	specs := make([]lifecycle.Spec, n)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: queue}
	}
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
}

func claim(t *testing.T, s store.Store, queue string, limit int, at *time.Time) []store.Job {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{queue, "other"}, Limit: limit, LeaseTTL: time.Minute, Start: true, Now: at})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestQueuePause(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			enqueueN(t, s, "q", 3)
			if _, err := qs.QueuePause(t.Context(), "q", true); err != nil {
				t.Fatal(err)
			}
			enqueueN(t, s, "q", 2) // enqueues still land
			if got := claim(t, s, "q", 10, nil); len(got) != 0 {
				t.Fatalf("claimed %d jobs of a paused queue", len(got))
			}
			info, err := qs.QueueInfo(t.Context())
			// Worker "w" claimed from q (any kind), so no kind is unserved.
			if err != nil || len(info) != 1 || !info[0].Paused || info[0].Jobs[lifecycle.Queued] != 5 || len(info[0].Unserved) != 0 {
				t.Fatalf("queue info %+v (%v)", info, err)
			}
			if _, err := qs.QueuePause(t.Context(), "q", false); err != nil {
				t.Fatal(err)
			}
			if got := claim(t, s, "q", 10, nil); len(got) != 5 {
				t.Fatalf("claimed %d jobs after resume, want 5", len(got))
			}
			verifyClean(t, s)
		})
	}
}

func TestQueueLimits(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			three, two, minute := 3, 2, time.Minute
			if _, err := qs.QueueLimit(ctx, "conc", store.QueueLimits{MaxRunning: &three}); err != nil {
				t.Fatal(err)
			}
			enqueueN(t, s, "conc", 10)
			got := claim(t, s, "conc", 10, nil)
			if len(got) != 3 {
				t.Fatalf("claimed %d, want the limit 3", len(got))
			}
			if len(claim(t, s, "conc", 10, nil)) != 0 {
				t.Fatal("claimed past the limit")
			}
			if _, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: got[0].ID, LeaseID: got[0].LeaseID}}}); err != nil {
				t.Fatal(err)
			}
			if n := len(claim(t, s, "conc", 10, nil)); n != 1 {
				t.Fatalf("claimed %d after one finished, want 1", n)
			}

			if _, err := qs.QueueLimit(ctx, "rate", store.QueueLimits{RateLimit: &two, RateInterval: &minute}); err != nil {
				t.Fatal(err)
			}
			enqueueN(t, s, "rate", 10)
			t0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
			at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
			if n := len(claim(t, s, "rate", 10, at(0))); n != 2 {
				t.Fatalf("claimed %d in the first window, want 2", n)
			}
			if n := len(claim(t, s, "rate", 10, at(59*time.Second))); n != 0 {
				t.Fatalf("claimed %d more in the same window, want 0", n)
			}
			if n := len(claim(t, s, "rate", 10, at(time.Minute))); n != 2 {
				t.Fatalf("claimed %d in the next window, want 2", n)
			}
			verifyClean(t, s)
		})
	}
}

// TestQueueLimitProcesses: three stores on one database (as three
// processes), each with many workers claiming and completing, never have
// more than the limit of a queue's jobs leased at once. Checked from the
// event log in event id order: a claim's event follows, in id order, the
// end of every lease it did not count.
func TestQueueLimitProcesses(t *testing.T) {
	t.Parallel()
	const limit = 4
	workers, jobs := 50, 600
	if testing.Short() {
		workers, jobs = 10, 150
	}
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
			stores := []store.Store{next(), next(), next()}
			qs, _ := store.Queues(stores[0])
			n := limit
			if _, err := qs.QueueLimit(t.Context(), "q", store.QueueLimits{MaxRunning: &n}); err != nil {
				t.Fatal(err)
			}
			enqueueN(t, stores[0], "q", jobs)
			// A guard against a hang, not a speed: 150 claimers contend for a
			// queue limited to 4. On 2 shared cores the 600 jobs took 55-125 s
			// while every waiting claimer held a connection (the completions
			// waited for one), about 10 s since claimers take turns in the
			// process (limit_turn.go).
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			var mu sync.Mutex
			done := 0
			for p, s := range stores {
				for w := range workers {
					wg.Go(func() {
						for ctx.Err() == nil {
							got, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: fmt.Sprint(p, "-", w), Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
							if err != nil {
								t.Error(err)
								return
							}
							for _, j := range got {
								if _, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}}}); err != nil {
									t.Error(err)
									return
								}
							}
							mu.Lock()
							done += len(got)
							finished := done >= jobs
							mu.Unlock()
							if finished {
								return
							}
						}
					})
				}
			}
			wg.Wait()
			if done != jobs {
				t.Fatalf("%d of %d jobs done", done, jobs)
			}
			all, err := stores[0].JobList(t.Context(), &store.JobListParams{Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			var evs []lifecycle.Event
			for _, j := range all {
				e, err := stores[0].JobEvents(t.Context(), j.ID)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, e...)
			}
			slices.SortFunc(evs, func(a, b lifecycle.Event) int { return int(a.ID - b.ID) })
			leased, most := 0, 0
			for _, e := range evs {
				switch {
				case !e.FromState.Leased() && e.ToState.Leased():
					leased++
				case e.FromState.Leased() && !e.ToState.Leased():
					leased--
				}
				most = max(most, leased)
			}
			if most > limit || most == 0 {
				t.Fatalf("%d jobs leased at once, the limit is %d", most, limit)
			}
			t.Logf("at most %d leased at once (limit %d)", most, limit)
			verifyClean(t, stores[0])
		})
	}
}

// TestFairTenants: with one tenant's many jobs queued first, another
// tenant's few jobs all start within the first batches; a lone tenant
// still gets every slot (work-conserving).
func TestFairTenants(t *testing.T) {
	t.Parallel()
	busy := 100_000
	if testing.Short() {
		busy = 5_000
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			yes := true
			if _, err := qs.QueueLimit(ctx, "q", store.QueueLimits{FairTenants: &yes, Weights: map[string]int{"big": 1, "small": 1}}); err != nil {
				t.Fatal(err)
			}
			for n := 0; n < busy; n += store.MaxBatch {
				specs := make([]lifecycle.Spec, min(store.MaxBatch, busy-n))
				for i := range specs {
					specs[i] = lifecycle.Spec{Kind: "k", Queue: "q", Tenant: "big"}
				}
				if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
					t.Fatal(err)
				}
			}
			// A lone tenant gets the whole batch.
			if got := claim(t, s, "q", 10, nil); len(got) != 10 {
				t.Fatalf("a lone tenant got %d of 10", len(got))
			}
			small := make([]lifecycle.Spec, 10)
			for i := range small {
				small[i] = lifecycle.Spec{Kind: "k", Queue: "q", Tenant: "small"}
			}
			if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: small}); err != nil {
				t.Fatal(err)
			}
			started := 0
			for batch := 1; batch <= 2; batch++ {
				got := claim(t, s, "q", 10, nil)
				if len(got) != 10 {
					t.Fatalf("batch %d claimed %d of 10 (not work-conserving)", batch, len(got))
				}
				for _, j := range got {
					if j.Tenant == "small" {
						started++
					}
				}
			}
			if started != 10 {
				t.Fatalf("the small tenant's 10 jobs: %d started in the first two batches of 10", started)
			}
		})
	}
}

// TestConcurrencyKeys: at most K jobs per key are leased, and a hot key's
// backlog queued ahead does not hold back the other keys.
func TestConcurrencyKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			two := 2
			if _, err := qs.QueueLimit(ctx, "q", store.QueueLimits{KeyLimit: &two}); err != nil {
				t.Fatal(err)
			}
			keyed := func(key string, n int) []lifecycle.Spec {
				specs := make([]lifecycle.Spec, n)
				for i := range specs {
					specs[i] = lifecycle.Spec{Kind: "k", Queue: "q", Env: map[string]string{store.ConcurrencyKeyEnv: key}}
				}
				return specs
			}
			specs := keyed("hot", 2000)
			for _, k := range []string{"a", "b", "c", "d", "e"} {
				specs = append(specs, keyed(k, 2)...)
			}
			if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
				t.Fatal(err)
			}
			perKey := map[string]int{}
			for range 3 {
				for _, j := range claim(t, s, "q", 10, nil) {
					perKey[j.Env[store.ConcurrencyKeyEnv]]++
				}
			}
			want := map[string]int{"hot": 2, "a": 2, "b": 2, "c": 2, "d": 2, "e": 2}
			for k, n := range want {
				if perKey[k] != n {
					t.Fatalf("leased per key %v, want %v", perKey, want)
				}
			}
			verifyClean(t, s)
		})
	}
}

// TestFairTenantsWithKeys: a queue with both fairness and a per-key limit
// applies both: each tenant's share and the fill skip keys at their limit.
func TestFairTenantsWithKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			yes, two := true, 2
			if _, err := qs.QueueLimit(ctx, "q", store.QueueLimits{FairTenants: &yes, KeyLimit: &two}); err != nil {
				t.Fatal(err)
			}
			// The big tenant queues first: 100 jobs of one hot key, then
			// 100 of distinct keys; the small tenant 10 of distinct keys.
			job := func(tenant, key string) lifecycle.Spec {
				return lifecycle.Spec{Kind: "k", Queue: "q", Tenant: tenant, Env: map[string]string{store.ConcurrencyKeyEnv: key}}
			}
			var specs []lifecycle.Spec
			for i := range 200 {
				specs = append(specs, job("big", map[bool]string{true: "hot", false: fmt.Sprint("b", i)}[i < 100]))
			}
			for i := range 10 {
				specs = append(specs, job("small", fmt.Sprint("s", i)))
			}
			if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
				t.Fatal(err)
			}
			count := func(jobs []store.Job) (hot, small int) {
				for _, j := range jobs {
					if j.Env[store.ConcurrencyKeyEnv] == "hot" {
						hot++
					}
					if j.Tenant == "small" {
						small++
					}
				}
				return hot, small
			}
			// Fair: 5 each; the big tenant's 5 hold only 2 of the hot key.
			got := claim(t, s, "q", 10, nil)
			if hot, small := count(got); len(got) != 10 || hot != 2 || small != 5 {
				t.Fatalf("first batch: %d jobs, %d hot, %d small; want 10, 2 hot (key limit), 5 small (fair share)", len(got), hot, small)
			}
			got = claim(t, s, "q", 10, nil)
			if hot, small := count(got); len(got) != 10 || hot != 0 || small != 5 {
				t.Fatalf("second batch: %d jobs, %d hot, %d small; want 10, no hot (at its limit), 5 small", len(got), hot, small)
			}
			verifyClean(t, s)
		})
	}
}
