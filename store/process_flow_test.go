package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestFlowHelperProcess is not a test: it is one process of
// TestFlowProcesses. In mode "limit" it runs STINT_FLOW_WORKERS workers
// claiming and completing jobs of queue "q" until none is left; in mode
// "debounce" it debounces keys k0..k2 STINT_FLOW_N times.
func TestFlowHelperProcess(t *testing.T) {
	mode := os.Getenv("STINT_FLOW_MODE")
	if mode == "" {
		t.Skip("a child process of TestFlowProcesses")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var s store.Store
	var err error
	if path := os.Getenv("STINT_FLOW_SQLITE"); path != "" {
		s, err = sqlite.OpenStore(ctx, path, sqlite.Options{})
	} else {
		s, err = postgres.OpenStore(ctx, os.Getenv("STINT_FLOW_POSTGRES"), postgres.Options{Schema: os.Getenv("STINT_FLOW_SCHEMA")})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	defer s.Close()
	n, _ := strconv.Atoi(os.Getenv("STINT_FLOW_N"))
	id := os.Getenv("STINT_FLOW_ID")
	var wg sync.WaitGroup
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	switch mode {
	case "limit":
		for w := range n {
			wg.Go(func() {
				for {
					got, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: fmt.Sprint(id, "-", w), Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
					if err != nil {
						fail(err)
					}
					if len(got) == 0 {
						// At the limit, or done: done when nothing is queued.
						left, err := s.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.Queued}, Queue: "q", Limit: 1})
						if err != nil {
							fail(err)
						}
						if len(left) == 0 {
							return
						}
						continue
					}
					if _, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: got[0].ID, LeaseID: got[0].LeaseID}}}); err != nil {
						fail(err)
					}
				}
			})
		}
	case "debounce":
		d, _ := store.Debounce(s)
		for i := range n {
			if _, err := d.JobDebounce(ctx, &store.JobDebounceParams{Key: fmt.Sprint("k", i%3), Delay: time.Hour,
				Spec: lifecycle.Spec{Kind: "k", Payload: json.RawMessage(strconv.Itoa(i))}}); err != nil {
				fail(err)
			}
		}
	}
	wg.Wait()
	os.Exit(0)
}

// TestFlowProcesses runs real processes on one database: three with 50
// workers each under a concurrency limit (never more than the limit leased
// at once, checked from the event log), and three debouncing the same keys
// at once (one live job per key at the end, every other one replaced).
func TestFlowProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			env, s := processDB(t, backend)
			t.Run("limit", func(t *testing.T) {
				const limit, jobs = 5, 300
				qs, _ := store.Queues(s)
				n := limit
				if _, err := qs.QueueLimit(t.Context(), "q", store.QueueLimits{MaxRunning: &n}); err != nil {
					t.Fatal(err)
				}
				enqueueN(t, s, "q", jobs)
				runProcesses(t, env, "limit", 50)
				all, err := s.JobList(t.Context(), &store.JobListParams{Queue: "q", Limit: store.MaxBatch})
				if err != nil {
					t.Fatal(err)
				}
				var evs []lifecycle.Event
				for _, j := range all {
					if j.State != lifecycle.Succeeded {
						t.Fatalf("job %s is %s", j.ID, j.State)
					}
					e, err := s.JobEvents(t.Context(), j.ID)
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
				if most > limit {
					t.Fatalf("%d jobs leased at once, the limit is %d", most, limit)
				}
				t.Logf("%d jobs by 3 processes x 50 workers: at most %d leased at once (limit %d)", jobs, most, limit)
				verifyClean(t, s)
			})
			t.Run("debounce", func(t *testing.T) {
				runProcesses(t, env, "debounce", 30)
				all, err := s.JobList(t.Context(), &store.JobListParams{Kind: "k", Limit: store.MaxBatch})
				if err != nil {
					t.Fatal(err)
				}
				live := map[string]int{}
				cancelled := 0
				for _, j := range all {
					switch {
					case j.DedupeKey == "":
					case !j.State.Terminal():
						live[j.DedupeKey]++
					case j.State == lifecycle.Cancelled:
						cancelled++
					}
				}
				if len(live) != 3 || live["debounce:k0"] != 1 || live["debounce:k1"] != 1 || live["debounce:k2"] != 1 || cancelled != 90-3 {
					t.Fatalf("live per key %v, %d replaced: want one per key and 87 replaced", live, cancelled)
				}
				verifyClean(t, s)
			})
		})
	}
}

// processDB makes a database for the helper processes and a store on it.
func processDB(t *testing.T, backend string) ([]string, store.Store) {
	t.Helper()
	if backend == "sqlite" {
		path := filepath.Join(t.TempDir(), "stint.db")
		s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return []string{"STINT_FLOW_SQLITE=" + path}, s
	}
	schema := pgtest.NewSchema(t)
	s, err := postgres.OpenStore(t.Context(), pgtest.URL(t), postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return []string{"STINT_FLOW_POSTGRES=" + pgtest.URL(t), "STINT_FLOW_SCHEMA=" + schema}, s
}

// runProcesses runs three helper processes in mode and waits for them.
func runProcesses(t *testing.T, env []string, mode string, n int) {
	t.Helper()
	var cmds []*exec.Cmd
	for i := range 3 {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFlowHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), append(env, "STINT_FLOW_MODE="+mode, fmt.Sprint("STINT_FLOW_N=", n), fmt.Sprint("STINT_FLOW_ID=p", i))...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
}
