package dispatch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// many is a counting store that also leases for several waiters in one
// call (store.ClaimManyStore), counted and gated like its single claims.
type many struct {
	*counting
	groups atomic.Int64
}

func (m *many) JobClaimMany(ctx context.Context, ps []store.JobClaimParams) ([]store.ClaimResult, error) {
	m.groups.Add(1)
	if g := m.gate.Load(); g != nil {
		m.held <- struct{}{}
		<-*g
	}
	cm, _ := store.As[store.ClaimManyStore](m.Store)
	return cm.JobClaimMany(ctx, ps)
}

func newMany(t *testing.T) *many { return &many{counting: newStore(t)} }

// parkLimit starts a waiting claim of limit jobs for worker and waits until
// it is parked (the n-th).
func parkLimit(t *testing.T, ctx context.Context, d interface {
	Claim(context.Context, *store.JobClaimParams, time.Duration) ([]store.Job, error)
}, worker string, limit int, out chan<- got) {
	t.Helper()
	go func() {
		p := params(worker)
		p.Limit = limit
		jobs, err := d.Claim(ctx, p, time.Minute)
		out <- got{worker, jobs, err}
	}()
}

// TestOneClaimServesTheWaiters: a wake-up with jobs for several waiters
// costs one store call, not one per waiter, and deals the jobs fairly: in
// turn, in the order the waiters came, one each before any gets a second;
// each job is leased to its own waiter.
func TestOneClaimServesTheWaiters(t *testing.T) {
	t.Parallel()
	s := newMany(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	out := make(chan got, 6)
	for i := range 6 {
		parkLimit(t, t.Context(), d, fmt.Sprint("w", i), 2, out)
		waitParked(t, d, i+1)
	}
	single := s.claims.Load() // the first waiter's claim of the empty queue
	ids := enqueue(t, s, 4)
	owner := map[string]string{}
	for range 4 {
		g := <-out
		if g.err != nil || len(g.jobs) != 1 || g.jobs[0].Owner != g.worker {
			t.Fatalf("a waiter got %+v; want one job leased to it", g)
		}
		owner[g.jobs[0].ID] = g.worker
	}
	for i, id := range ids {
		if w := fmt.Sprint("w", i); owner[id] != w {
			t.Errorf("job %d went to %q, want %s (first come, first served, one each)", i, owner[id], w)
		}
	}
	waitParked(t, d, 2)
	if n := s.claims.Load() - single; n != 0 {
		t.Errorf("%d single claims after the wake-up, want none", n)
	}
	if n := s.groups.Load(); n < 1 || n > 2 {
		t.Errorf("%d group claims for one wake-up, want 1 (2 if SQLite's listener heard the commit twice)", n)
	}
	// The waiters left are served next, in their order.
	ids = enqueue(t, s, 3)
	g1, g2 := <-out, <-out
	if g1.worker > g2.worker {
		g1, g2 = g2, g1
	}
	if g1.worker != "w4" || len(g1.jobs) != 2 || g2.worker != "w5" || len(g2.jobs) != 1 {
		t.Fatalf("got %s: %d jobs and %s: %d; want w4: 2 (its limit), w5: 1", g1.worker, len(g1.jobs), g2.worker, len(g2.jobs))
	}
}

// TestGroupClaimReleasesVanishedWaiter: when one of the waiters a group
// claim serves goes away while the claim runs, its job is released at
// once without spending a retry, the others keep theirs, and the next
// claim gets the released job; a waiter gone before the claim is leased
// nothing.
func TestGroupClaimReleasesVanishedWaiter(t *testing.T) {
	t.Parallel()
	s := newMany(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	out := make(chan got, 4)
	ctxs := make([]context.CancelFunc, 4)
	for i := range 4 {
		ctx, cancel := context.WithCancel(t.Context())
		ctxs[i] = cancel
		parkLimit(t, ctx, d, fmt.Sprint("w", i), 1, out)
		waitParked(t, d, i+1)
	}
	ctxs[0]() // gone before any job comes
	gate := make(chan struct{})
	s.gate.Store(&gate)
	ids := enqueue(t, s, 3)
	<-s.held  // the group claim for the waiters runs...
	ctxs[2]() // ...and one of them goes away meanwhile
	s.gate.Store(nil)
	close(gate)
	jobs := map[string]string{}
	for range 4 {
		g := <-out
		switch g.worker {
		case "w0", "w2":
			if g.err == nil || len(g.jobs) != 0 {
				t.Fatalf("vanished waiter %s got %+v, want its context's error", g.worker, g)
			}
		default:
			if g.err != nil || len(g.jobs) != 1 || g.jobs[0].Owner != g.worker {
				t.Fatalf("waiter %s got %+v, want one job of its own", g.worker, g)
			}
			jobs[g.jobs[0].ID] = g.worker
		}
	}
	if jobs[ids[0]] != "w1" || jobs[ids[2]] != "w3" {
		t.Errorf("jobs went %v; want the first to w1, the third to w3", jobs)
	}
	next, err := d.Claim(t.Context(), params("next"), time.Minute)
	if err != nil || len(next) != 1 || next[0].ID != ids[1] {
		t.Fatalf("the next claim got %v, %v; want the released job %s", next, err, ids[1])
	}
	if j := next[0]; j.Attempt != 2 || j.Failures != 0 || j.Owner != "next" {
		t.Fatalf("attempt %d failures %d owner %q: want the second attempt, no failure, owner next", j.Attempt, j.Failures, j.Owner)
	}
	for _, c := range ctxs {
		c()
	}
}
