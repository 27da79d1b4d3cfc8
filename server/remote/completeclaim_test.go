package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/dispatch"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// rpcs counts the worker API's requests by method name.
type rpcs struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *rpcs) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *rpcs) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// completeClaimServer serves s with a dispatcher on clk and returns a
// remote store over it and the request counts.
func completeClaimServer(t *testing.T, s store.Store, clk clock.Clock) (*remote.Store, *dispatch.Dispatcher, *rpcs) {
	t.Helper()
	d, err := dispatch.New(dispatch.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Store: s, NoAuth: true, Clock: clk, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	counts := &rpcs{}
	srv := httptest.NewServer(counts.wrap(h))
	t.Cleanup(srv.Close)
	st, err := remote.New(remote.Options{URL: srv.URL, ClaimWait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, d, counts
}

func enqueueN(t *testing.T, s store.Store, n int) {
	t.Helper()
	specs := make([]lifecycle.Spec, n)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: "q"}
	}
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
}

func claimParams(id string, limit int) *store.JobClaimParams {
	return &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: limit, LeaseTTL: time.Minute, Start: true, RequestID: id}
}

func ids(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// TestCompleteAndClaim: one CompleteAndClaim request through a real server
// completes a job and claims two more; a completion with a stale lease in
// the same call is refused on its own and the claim still gets its jobs. The
// same call again (same request ids) answers the same and changes nothing;
// a call with a bad claim refuses everything and completes nothing.
func TestCompleteAndClaim(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			st, _, counts := completeClaimServer(t, s, clock.System{})
			enqueueN(t, s, 5)
			held, err := st.JobClaim(t.Context(), claimParams("first", 3))
			if err != nil || len(held) != 3 {
				t.Fatalf("claimed %d: %v", len(held), err)
			}
			cs := []store.JobCompleteParams{
				{OwnerParams: store.OwnerParams{JobID: held[0].ID, LeaseID: held[0].LeaseID, RequestID: "c0"}},
				{OwnerParams: store.OwnerParams{JobID: held[1].ID, LeaseID: "not-the-lease", RequestID: "c1"}},
			}
			res, jobs, err := st.JobCompleteClaim(t.Context(), cs, claimParams("second", 2))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 2 || res[0].Err != nil || res[0].Job.State != lifecycle.Succeeded {
				t.Fatalf("results %+v: want the first completion succeeded", res)
			}
			if !errors.Is(res[1].Err, store.ErrStaleLease) {
				t.Fatalf("the stale completion got %v, want ErrStaleLease", res[1].Err)
			}
			if len(jobs) != 2 {
				t.Fatalf("claimed %d jobs after the completions, want 2", len(jobs))
			}
			if n := counts.get("CompleteAndClaim"); n != 1 || counts.get("CompleteMany") != 0 {
				t.Fatalf("requests %v: want one CompleteAndClaim", counts.n)
			}

			res2, jobs2, err := st.JobCompleteClaim(t.Context(), cs, claimParams("second", 2))
			if err != nil {
				t.Fatal(err)
			}
			if res2[0].Err != nil || res2[0].Job.ID != held[0].ID || res2[0].Job.State != lifecycle.Succeeded || !errors.Is(res2[1].Err, store.ErrStaleLease) {
				t.Fatalf("the retry's results %+v, want those of the first call", res2)
			}
			if fmt.Sprint(ids(jobs2)) != fmt.Sprint(ids(jobs)) {
				t.Fatalf("the retry claimed %v, want the first call's %v", ids(jobs2), ids(jobs))
			}
			queued, err := s.JobList(t.Context(), &store.JobListParams{States: []lifecycle.State{lifecycle.Queued}})
			if err != nil || len(queued) != 0 {
				t.Fatalf("%d jobs queued after the retry (%v), want 0: the retry leased nothing more", len(queued), err)
			}

			bad := claimParams("third", 1)
			bad.Queues = nil
			live := []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: held[2].ID, LeaseID: held[2].LeaseID}}}
			if _, _, err := st.JobCompleteClaim(t.Context(), live, bad); !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("a claim with no queue got %v, want a validation error", err)
			}
			if j, err := s.JobGet(t.Context(), held[2].ID); err != nil || j.State != lifecycle.Running {
				t.Fatalf("job %s is %s (%v) after a refused call, want running: nothing is written", held[2].ID, j.State, err)
			}
		})
	}
}

// TestCompleteAndClaimWaits: a CompleteAndClaim that asks to wait writes its
// completion, then parks at the dispatcher like a Claim's long poll. When
// its caller goes away, it leaves the line: a job enqueued afterwards is
// leased to nobody, and the next claim gets it on its first attempt.
func TestCompleteAndClaimWaits(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			st, d, _ := completeClaimServer(t, s, clock.NewManual(time.Now()))
			enqueueN(t, s, 1)
			held, err := st.JobClaim(t.Context(), claimParams("", 1))
			if err != nil || len(held) != 1 {
				t.Fatalf("claimed %d: %v", len(held), err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, _, err := st.JobCompleteClaim(store.WithClaimWaiting(ctx),
					[]store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: held[0].ID, LeaseID: held[0].LeaseID}}}, claimParams("", 1))
				done <- err
			}()
			for d.Waiting() != 1 {
				changed := d.Changed()
				if d.Waiting() == 1 {
					break
				}
				select {
				case <-changed:
				case err := <-done:
					t.Fatalf("the call returned before parking: %v", err)
				case <-t.Context().Done():
					t.Fatal("the claim never parked")
				}
			}
			if j, err := s.JobGet(t.Context(), held[0].ID); err != nil || j.State != lifecycle.Succeeded {
				t.Fatalf("job %s is %s (%v) while the claim waits, want succeeded", held[0].ID, j.State, err)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call got %v, want context.Canceled", err)
			}
			for d.Waiting() != 0 {
				changed := d.Changed()
				if d.Waiting() == 0 {
					break
				}
				select {
				case <-changed:
				case <-t.Context().Done():
					t.Fatal("the abandoned claim never left the line")
				}
			}
			enqueueN(t, s, 1)
			jobs, err := st.JobClaim(t.Context(), claimParams("", 1))
			if err != nil || len(jobs) != 1 || jobs[0].Attempt != 1 {
				t.Fatalf("the next claim got %+v (%v), want the new job on its first attempt", jobs, err)
			}
		})
	}
}

// TestPoolCarriesCompletions: a pool over a remote store with
// CarryCompletions works a backlog sending its completions with its claims
// (CompleteAndClaim), and without it in separate calls (the default); every
// job succeeds exactly once either way.
func TestPoolCarriesCompletions(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		for _, carry := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/carry=%v", b.name, carry), func(t *testing.T) {
				t.Parallel()
				testPoolCarries(t, b.open(t), carry)
			})
		}
	}
}

func testPoolCarries(t *testing.T, s store.Store, carry bool) {
	st, _, counts := completeClaimServer(t, s, clock.System{})
	const n = 200
	enqueueN(t, s, n)
	var mu sync.Mutex
	ran := map[string]int{}
	all := make(chan struct{})
	mux := stint.NewMux()
	mux.HandleFunc("k", func(ctx context.Context, j *stint.Job) error {
		mu.Lock()
		defer mu.Unlock()
		ran[j.ID()]++
		if len(ran) == n {
			close(all)
		}
		return nil
	})
	p, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"q": 4}, WorkerID: "pool", CarryCompletions: carry,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-t.Context().Done():
		t.Fatal("the jobs never all ran")
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	done, err := s.JobList(t.Context(), &store.JobListParams{States: []lifecycle.State{lifecycle.Succeeded}, Limit: 2 * n})
	if err != nil || len(done) != n {
		t.Fatalf("%d jobs succeeded (%v), want %d", len(done), err, n)
	}
	for id, k := range ran {
		if k != 1 {
			t.Errorf("job %s ran %d times", id, k)
		}
	}
	if got := counts.get("CompleteAndClaim"); carry == (got == 0) {
		t.Fatalf("requests %v with CarryCompletions %v: %d CompleteAndClaim", counts.n, carry, got)
	}
	t.Logf("requests for %d jobs: %v", n, counts.n)
}

// TestCompleteClaimOlderServer: against a server without CompleteAndClaim
// (it answers unimplemented) the remote store completes and claims in a
// CompleteMany and a Claim, from then on without trying again.
func TestCompleteClaimOlderServer(t *testing.T) {
	t.Parallel()
	s := backends[0].open(t)
	h, err := server.New(server.Config{Store: s, NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	counts := &rpcs{}
	srv := httptest.NewServer(counts.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/CompleteAndClaim") {
			http.NotFound(w, r) // as a server from before it
			return
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(srv.Close)
	st, err := remote.New(remote.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	enqueueN(t, s, 3)
	held, err := st.JobClaim(t.Context(), claimParams("", 1))
	if err != nil || len(held) != 1 {
		t.Fatalf("claimed %d: %v", len(held), err)
	}
	for round := range 2 {
		cs := []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: held[0].ID, LeaseID: held[0].LeaseID}}}
		res, jobs, err := st.JobCompleteClaim(t.Context(), cs, claimParams("", 1))
		if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Job.State != lifecycle.Succeeded || len(jobs) != 1 {
			t.Fatalf("round %d: results %+v, jobs %d, %v; want the completion written and one job claimed", round, res, len(jobs), err)
		}
		held = jobs
	}
	if n, m, c := counts.get("CompleteAndClaim"), counts.get("CompleteMany"), counts.get("Claim"); n != 1 || m != 2 || c != 3 {
		t.Fatalf("requests %v: want one CompleteAndClaim (unimplemented), then CompleteMany and Claim each round", counts.n)
	}
}
