package dispatch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server/dispatch"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// counting is a real store that counts claims and, when gate is set,
// holds each claim until the test lets it go.
type counting struct {
	store.Store
	claims atomic.Int64
	gate   atomic.Pointer[chan struct{}]
	held   chan struct{} // receives when a claim is held at the gate
}

func (c *counting) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	c.claims.Add(1)
	if g := c.gate.Load(); g != nil {
		c.held <- struct{}{}
		<-*g
	}
	return c.Store.JobClaim(ctx, p)
}

func newStore(t *testing.T) *counting {
	t.Helper()
	s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &counting{Store: s, held: make(chan struct{}, 16)}
}

func newDispatcher(t *testing.T, s store.Store, clk clock.Clock, parallel int) *dispatch.Dispatcher {
	t.Helper()
	d, err := dispatch.New(dispatch.Config{Store: s, Clock: clk, Parallel: parallel, Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitParked waits until n claims are parked.
func waitParked(t *testing.T, d *dispatch.Dispatcher, n int) {
	t.Helper()
	for {
		changed := d.Changed()
		if d.Waiting() == n {
			return
		}
		select {
		case <-changed:
		case <-t.Context().Done():
			t.Fatalf("%d claims parked, want %d", d.Waiting(), n)
		}
	}
}

func enqueue(t *testing.T, s store.Store, n int) []string {
	t.Helper()
	specs := make([]lifecycle.Spec, n)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: "q"}
	}
	res, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

func params(worker string) *store.JobClaimParams {
	return &store.JobClaimParams{WorkerID: worker, Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Minute}
}

type got struct {
	worker string
	jobs   []store.Job
	err    error
}

// park starts a waiting claim for worker and waits until it is parked
// (the n-th).
func park(t *testing.T, ctx context.Context, d *dispatch.Dispatcher, worker string, n int, out chan<- got) {
	t.Helper()
	go func() {
		jobs, err := d.Claim(ctx, params(worker), time.Minute)
		out <- got{worker, jobs, err}
	}()
	waitParked(t, d, n)
}

// TestWakeupFeedsWaitersWithoutAHerd: twenty claims wait on an empty queue;
// one job arriving costs one claim that leases it and one that finds the
// queue drained, not one claim per waiter. Waiting cost none.
func TestWakeupFeedsWaitersWithoutAHerd(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan got, 20)
	for i := range 20 {
		park(t, ctx, d, fmt.Sprint("w", i), i+1, out)
	}
	if n := s.claims.Load(); n != 1 {
		t.Fatalf("%d claims while twenty waited on an empty queue, want the first waiter's one", n)
	}
	ids := enqueue(t, s, 1)
	g := <-out
	if g.err != nil || len(g.jobs) != 1 || g.jobs[0].ID != ids[0] || g.worker != "w0" {
		t.Fatalf("the first waiter got %+v, want job %s", g, ids[0])
	}
	waitParked(t, d, 19)
	cancel()
	for range 19 {
		if g := <-out; g.err == nil {
			t.Fatalf("a cancelled waiter got %+v", g)
		}
	}
	// The first waiter's empty claim, the one that leased the job, and one
	// that found the queue drained per wake-up heard (SQLite's listener may
	// hear the commit's own wake-up again): never one per waiter.
	if n := s.claims.Load(); n < 3 || n > 4 {
		t.Fatalf("%d claims in all, want 3 or 4", n)
	}
}

// TestFirstComeFirstServed: jobs arriving one by one go to the waiters in
// the order they began waiting.
func TestFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	out := make(chan got, 5)
	for i := range 5 {
		park(t, t.Context(), d, fmt.Sprint("w", i), i+1, out)
	}
	for i := range 5 {
		enqueue(t, s, 1)
		g := <-out
		if g.err != nil || len(g.jobs) != 1 || g.worker != fmt.Sprint("w", i) || g.jobs[0].Owner != g.worker {
			t.Fatalf("job %d went to %+v, want w%d", i, g, i)
		}
	}
}

// TestBurstIsSharedInOrder: a burst of jobs larger than the waiters is
// handed out one claim per waiter, each leased under its own worker id.
func TestBurstIsSharedInOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 4)
	out := make(chan got, 8)
	for i := range 8 {
		park(t, t.Context(), d, fmt.Sprint("w", i), i+1, out)
	}
	enqueue(t, s, 20)
	seen := map[string]bool{}
	for range 8 {
		g := <-out
		if g.err != nil || len(g.jobs) != 1 || g.jobs[0].Owner != g.worker || seen[g.jobs[0].ID] {
			t.Fatalf("a waiter got %+v", g)
		}
		seen[g.jobs[0].ID] = true
	}
}

// TestVanishedWaiterReleases: a job leased for a waiter whose request ended
// while its claim was under way is released at once, without spending a
// retry, and the next claim gets it.
func TestVanishedWaiterReleases(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan got, 1)
	park(t, ctx, d, "gone", 1, out)
	gate := make(chan struct{})
	s.gate.Store(&gate)
	ids := enqueue(t, s, 1)
	<-s.held // the dispatcher claims for the waiter...
	cancel() // ...which goes away meanwhile
	s.gate.Store(nil)
	close(gate)
	if g := <-out; g.err == nil || len(g.jobs) != 0 {
		t.Fatalf("the vanished waiter got %+v, want its context's error", g)
	}
	jobs, err := d.Claim(t.Context(), params("next"), time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].ID != ids[0] {
		t.Fatalf("the next claim got %v, %v; want job %s", jobs, err, ids[0])
	}
	j := jobs[0]
	if j.Attempt != 2 || j.Failures != 0 || j.Owner != "next" {
		t.Fatalf("attempt %d failures %d owner %q: want the second attempt, no failure, owner next", j.Attempt, j.Failures, j.Owner)
	}
}

// TestIdleCostsNothing: waiters whose waits end and who wait again, many
// times over, make no store call after the first empty claim; one timer
// serves all their deadlines.
func TestIdleCostsNothing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	clk := clock.NewManual(time.Now())
	d := newDispatcher(t, s, clk, 4)
	const n, wait = 50, 30 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var polls atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for ctx.Err() == nil { // a worker long-polling in a loop
				if _, err := d.Claim(ctx, params(fmt.Sprint("w", i)), wait); err == nil {
					polls.Add(1)
				}
			}
		})
	}
	waitParked(t, d, n)
	before := s.claims.Load()
	for round := 1; round <= 5; round++ {
		// One timer, plus the few it replaced as deadlines came in.
		if timers := clk.Waiters(); timers > 5 {
			t.Fatalf("%d timers pending for %d waiters, want about one", timers, n)
		}
		clk.Advance(wait)
		for polls.Load() < int64(round*n) || d.Waiting() < n {
			changed := d.Changed()
			if polls.Load() >= int64(round*n) && d.Waiting() == n {
				break
			}
			select {
			case <-changed:
			case <-t.Context().Done():
				t.Fatalf("round %d: %d polls, %d parked", round, polls.Load(), d.Waiting())
			}
		}
	}
	if extra := s.claims.Load() - before; extra != 0 {
		t.Fatalf("%d store claims while %d waiters polled five times each and no job came, want 0", extra, n)
	}
	cancel()
	wg.Wait()
}

// TestLeaveAnswersTheWorkersWaiters: Leave answers the parked claims of one
// worker with nothing and leaves the others parked; a job that comes next
// goes to a waiter still there, on its first attempt.
func TestLeaveAnswersTheWorkersWaiters(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	out := make(chan got, 2)
	park(t, t.Context(), d, "stopping", 1, out)
	park(t, t.Context(), d, "staying", 2, out)
	d.Leave("stopping")
	if g := <-out; g.worker != "stopping" || g.err != nil || len(g.jobs) != 0 {
		t.Fatalf("got %+v, want the stopping worker's claim answered with nothing", g)
	}
	if n := d.Waiting(); n != 1 {
		t.Fatalf("%d claims parked after Leave, want the other worker's one", n)
	}
	d.Leave("") // nobody: a release the server did not lease
	d.Leave("unknown")
	ids := enqueue(t, s, 1)
	g := <-out
	if g.worker != "staying" || g.err != nil || len(g.jobs) != 1 || g.jobs[0].ID != ids[0] || g.jobs[0].Attempt != 1 {
		t.Fatalf("got %+v, want job %s on its first attempt for the staying worker", g, ids[0])
	}
}

// TestLeftWaiterIsNotServed: a parked claim whose request has ended is not
// leased a job, whether the dispatcher or its own caller notices first: the
// job's next claim is its first attempt.
func TestLeftWaiterIsNotServed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan got, 1)
	park(t, ctx, d, "gone", 1, out)
	cancel()
	ids := enqueue(t, s, 1)
	if g := <-out; len(g.jobs) != 0 {
		t.Fatalf("the claim that ended got %+v", g)
	}
	jobs, err := d.Claim(t.Context(), params("next"), time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].ID != ids[0] || jobs[0].Attempt != 1 {
		t.Fatalf("the next claim got %+v, %v; want job %s on its first attempt", jobs, err, ids[0])
	}
}
