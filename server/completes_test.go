package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// gatedStore is a real store whose completions the test can hold at a
// gate, and which records the size of each store call.
type gatedStore struct {
	store.Store
	mu    sync.Mutex
	sizes []int
	gate  chan struct{} // when set, the next completion waits on it
	held  chan struct{} // receives when a completion is held
}

func (g *gatedStore) JobComplete(ctx context.Context, ps []store.JobCompleteParams) ([]store.Result, error) {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(ps))
	gate := g.gate
	g.gate = nil
	g.mu.Unlock()
	if gate != nil {
		g.held <- struct{}{}
		<-gate
	}
	return g.Store.JobComplete(ctx, ps)
}

// running enqueues n jobs and claims and starts them.
func running(t *testing.T, s store.Store, n int) []store.Job {
	t.Helper()
	specs := make([]lifecycle.Spec, n)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: "q"}
	}
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: n, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(jobs) != n {
		t.Fatalf("claimed %d, %v; want %d", len(jobs), err, n)
	}
	return jobs
}

// waitPending waits until n calls are pending behind a held store call.
func waitPending(t *testing.T, queued <-chan int, n int) {
	t.Helper()
	for {
		select {
		case got := <-queued:
			if got == n {
				return
			}
		case <-t.Context().Done():
			t.Fatalf("fewer than %d calls ever queued", n)
		}
	}
}

func completion(j store.Job, req string) store.JobCompleteParams {
	return store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, RequestID: req}}
}

func newGated(t *testing.T) *gatedStore {
	t.Helper()
	s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &gatedStore{Store: s, held: make(chan struct{}, 1)}
}

// TestCompletesMergeConcurrentCalls: calls that arrive while a store call
// runs go together in the next one; a call whose job is already in that
// batch waits for the one after; each call gets its own results.
func TestCompletesMergeConcurrentCalls(t *testing.T) {
	t.Parallel()
	g := newGated(t)
	queued := make(chan int, 8)
	c := &completes{s: g, queued: queued}
	jobs := running(t, g, 4)
	g.gate = make(chan struct{})
	gate := g.gate
	type out struct {
		i   int
		res []store.Result
		err error
	}
	outs := make(chan out, 5)
	call := func(i int, ps ...store.JobCompleteParams) {
		res, err := c.complete(t.Context(), ps)
		outs <- out{i, res, err}
	}
	go call(0, completion(jobs[0], "r0"))
	<-g.held // the first store call runs, held
	<-queued // (call 0's own joining)
	// The three wait behind the first, in this order.
	go call(1, completion(jobs[1], "r1"), completion(jobs[2], "r2"))
	waitPending(t, queued, 1)
	go call(3, completion(jobs[1], "r1")) // a retry of call 1, under way
	waitPending(t, queued, 2)
	go call(2, completion(jobs[3], "r3"))
	waitPending(t, queued, 3)
	close(gate)
	for range 4 {
		o := <-outs
		if o.err != nil {
			t.Fatalf("call %d: %v", o.i, o.err)
		}
		for _, r := range o.res {
			if r.Err != nil || r.Job.State != lifecycle.Succeeded {
				t.Fatalf("call %d: %+v, %v; want succeeded", o.i, r.Job.State, r.Err)
			}
		}
		if want := map[int]int{0: 1, 1: 2, 2: 1, 3: 1}[o.i]; len(o.res) != want {
			t.Fatalf("call %d got %d results, want %d", o.i, len(o.res), want)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if fmt.Sprint(g.sizes) != "[1 3 1]" {
		t.Fatalf("store calls of %v completions, want [1 3 1]: the first alone, then calls 1 and 2 together, then the retry", g.sizes)
	}
}

// TestCompletesFailedMergeTriesEachAlone: a merged call that fails as a
// whole because of one call's items is retried call by call, so the other
// calls succeed and only the bad one gets the error.
func TestCompletesFailedMergeTriesEachAlone(t *testing.T) {
	t.Parallel()
	g := newGated(t)
	queued := make(chan int, 8)
	c := &completes{s: g, queued: queued}
	jobs := running(t, g, 2)
	g.gate = make(chan struct{})
	gate := g.gate
	errs := make(chan error, 3)
	go func() {
		_, err := c.complete(t.Context(), []store.JobCompleteParams{completion(jobs[0], "a")})
		errs <- err
	}()
	<-g.held
	var good []store.Result
	var goodErr error
	done := make(chan struct{})
	go func() {
		good, goodErr = c.complete(t.Context(), []store.JobCompleteParams{completion(jobs[1], "b")})
		close(done)
	}()
	go func() {
		_, err := c.complete(t.Context(), []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: "", LeaseID: "x", RequestID: "c"}}})
		errs <- err
	}()
	waitPending(t, queued, 2)
	close(gate)
	<-done
	if goodErr != nil || len(good) != 1 || good[0].Err != nil {
		t.Fatalf("the good call: %+v, %v; want its job completed", good, goodErr)
	}
	var bad int
	for range 2 {
		if err := <-errs; err != nil {
			bad++
			if !errors.Is(err, store.ErrValidation) {
				t.Errorf("the bad call's error: %v, want a validation error", err)
			}
		}
	}
	if bad != 1 {
		t.Fatalf("%d calls failed, want only the bad one", bad)
	}
}
