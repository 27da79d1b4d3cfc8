package stint_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Cancellation of a running handler: by a client (soft, hard) and by the
// lease being lost to another worker.

func TestSoftCancelIsAcknowledged(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		b := newBlocker()
		e.start(muxOf("long", b), e.config())
		id := e.enqueue(stint.Spec{Kind: "long"}).ID
		receive(t, b.started, "the handler to start")
		if j, err := e.client.Cancel(context.Background(), id, stint.CancelSoft, "the user closed the tab"); err != nil || j.State != stint.CancelRequested {
			t.Fatalf("cancel: %s, %v", j.State, err)
		}
		// The store's lease notice tells the pool at once (the clock stays
		// put: no heartbeat falls due), which cancels the handler.
		if cause := receive(t, b.causes, "the handler's context to be cancelled"); !errors.Is(cause, stint.ErrCancelRequested) {
			t.Errorf("cause = %v, want ErrCancelRequested", cause)
		}
		b.release <- context.Canceled
		j := e.waitState(id, stint.Cancelled)
		evs, _ := e.client.Events(context.Background(), id)
		last := evs[len(evs)-1]
		if last.Op != lifecycle.OpAckCancel || last.Actor != lifecycle.ActorOwner || j.Reason != "the user closed the tab" {
			t.Errorf("last event %s by %s, reason %q: want the owner's acknowledgement", last.Op, last.Actor, j.Reason)
		}
	})
}

func TestSoftCancelOfAHandlerThatFinishesAnywaySucceeds(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	b := newBlocker()
	e.start(muxOf("long", b), e.config())
	id := e.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, b.started, "the handler to start")
	if _, err := e.client.Cancel(context.Background(), id, stint.CancelSoft, ""); err != nil {
		t.Fatal(err)
	}
	b.release <- nil // done before it heard of the cancel
	e.waitState(id, stint.Succeeded)
}

func TestHardCancelFencesTheHandler(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		b := newBlocker()
		p := e.start(muxOf("long", b), e.config())
		id := e.enqueue(stint.Spec{Kind: "long"}).ID
		fence := receive(t, b.started, "the handler to start").Fence()
		if j, err := e.client.Cancel(context.Background(), id, stint.CancelHard, "wrong input"); err != nil || j.State != stint.Cancelled {
			t.Fatalf("cancel: %s, %v", j.State, err)
		}
		if cause := receive(t, b.causes, "the handler's context to be cancelled"); !errors.Is(cause, stint.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", cause)
		}
		b.release <- nil // the handler ignores the cancel and "completes"
		eventually(t, "the handler to return", func() bool { return p.Stats().Running == 0 })
		if s := p.Stats(); s.Stale != 1 || s.Succeeded != 0 {
			t.Errorf("stats %+v: want the lost lease counted once and nothing completed", s)
		}
		// A late complete with the handler's fencing token changes nothing.
		res, err := e.s.JobComplete(context.Background(), []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: id, LeaseID: fence.LeaseID}}})
		if err != nil || !errors.Is(res[0].Err, stint.ErrStaleLease) {
			t.Errorf("late complete: %v, %v; want ErrStaleLease", res, err)
		}
		if j := e.get(id); j.State != stint.Cancelled {
			t.Errorf("state = %s, want cancelled", j.State)
		}
	})
}

func TestHardCancelIsNoticedByACheckpoint(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		proceed := make(chan struct{})
		errs := make(chan error, 1)
		causes := make(chan error, 1)
		started := make(chan string, 1)
		mux := muxOf("steps", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			started <- j.ID()
			<-proceed
			err := j.Checkpoint(ctx, map[string]int{"step": 2}, 1, 0)
			errs <- err
			causes <- context.Cause(ctx)
			return err
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "steps"}).ID
		receive(t, started, "the handler to start")
		if _, err := e.client.Cancel(context.Background(), id, stint.CancelHard, ""); err != nil {
			t.Fatal(err)
		}
		close(proceed)
		if err := receive(t, errs, "the checkpoint"); !errors.Is(err, stint.ErrStaleLease) {
			t.Errorf("checkpoint after a hard cancel: %v, want ErrStaleLease", err)
		}
		if cause := receive(t, causes, "the cause"); !errors.Is(cause, stint.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", cause)
		}
		if j := e.get(id); j.State != stint.Cancelled || j.Checkpoint != nil {
			t.Errorf("state %s, checkpoint %s: want cancelled, no checkpoint", j.State, j.Checkpoint)
		}
	})
}

// A worker whose heartbeats did not arrive in time loses its job to another
// worker; it learns so at its next heartbeat and its handler is cancelled.
func TestLeaseLostToAnotherWorker(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	ttl := 30 * time.Second
	b := newBlocker()
	cfgA := e.config()
	cfgA.LeaseTTL, cfgA.Queues, cfgA.WorkerID = ttl, map[string]int{"default": 1}, "worker-a"
	a := e.start(muxOf("long", b), cfgA)
	id := e.enqueue(stint.Spec{Kind: "long"}).ID
	fence := receive(t, b.started, "worker A's handler to start").Fence()

	// Time passes at once beyond the lease: worker A's heartbeat comes too
	// late; the reaper stalls and requeues the job; worker B takes it.
	e.clk.Advance(ttl + time.Second)
	if n, err := e.s.JobStallExpired(context.Background(), &store.MaintainParams{}); err != nil || n != 1 {
		t.Logf("stall: %d, %v (worker A's heartbeat may have been first)", n, err)
	}
	if _, err := e.s.JobRequeueStalled(context.Background(), &store.MaintainParams{}); err != nil {
		t.Fatal(err)
	}
	cfgB := e.config()
	cfgB.LeaseTTL, cfgB.WorkerID = ttl, "worker-b"
	e.start(muxOf("long", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil })), cfgB)
	j := e.waitState(id, stint.Succeeded)
	if j.Attempt != 2 || j.LastOwner != "worker-b" {
		t.Errorf("attempt %d by %s, want attempt 2 by worker-b", j.Attempt, j.LastOwner)
	}

	e.advanceUntil(ttl/3, "worker A's handler to be cancelled", func() bool { return len(b.causes) > 0 })
	if cause := <-b.causes; !errors.Is(cause, stint.ErrLeaseLost) {
		t.Errorf("cause = %v, want ErrLeaseLost", cause)
	}
	b.release <- nil
	eventually(t, "worker A's handler to return", func() bool { return a.Stats().Running == 0 })
	res, err := e.s.JobComplete(context.Background(), []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: id, LeaseID: fence.LeaseID}}})
	if err != nil || !errors.Is(res[0].Err, stint.ErrStaleLease) {
		t.Errorf("worker A's late complete: %v, %v; want ErrStaleLease", res, err)
	}
	if s := a.Stats(); s.Stale != 1 || s.Succeeded != 0 {
		t.Errorf("worker A's stats %+v: want one stale, none succeeded", s)
	}
}

// A handler that returns before its worker noticed the lease was lost has
// its complete rejected by the store (fenced), counted as stale.
func TestLateCompleteIsRejectedAsStale(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		b := newBlocker()
		cfg := e.config()
		cfg.Queues = map[string]int{"default": 1}
		a := e.start(muxOf("long", b), cfg)
		id := e.enqueue(stint.Spec{Kind: "long"}).ID
		receive(t, b.started, "the handler to start")

		// As of after the lease's expiry (the clocks stay put, so the pool's
		// only heartbeat is the one the stall's lease notice asks for), the
		// reaper takes the job back and worker B claims it.
		later := e.now().Add(cfg.LeaseTTL + time.Second)
		ctx := context.Background()
		if n, err := e.s.JobStallExpired(ctx, &store.MaintainParams{Now: &later}); err != nil || n != 1 {
			t.Fatalf("stall: %d, %v", n, err)
		}
		// Worker A's pool, told of the stall by a lease notice, renews at
		// once and may hold the row for that moment: the SKIP LOCKED requeue
		// and claim then pass it by, so they are tried again, as the reaper
		// and a worker would.
		eventually(t, "the job to be requeued", func() bool {
			n, err := e.s.JobRequeueStalled(ctx, &store.MaintainParams{Now: &later})
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
		var claimed []stint.JobRecord
		eventually(t, "worker B to claim the job", func() bool {
			var err error
			claimed, err = e.s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "worker-b", Queues: []string{"default"}, Limit: 1, LeaseTTL: time.Minute, Start: true, Now: &later})
			if err != nil {
				t.Fatalf("worker B's claim: %v", err)
			}
			return len(claimed) == 1
		})

		b.release <- nil
		eventually(t, "worker A's complete to be rejected", func() bool { return a.Stats().Stale == 1 })
		if s := a.Stats(); s.Succeeded != 0 {
			t.Errorf("worker A's stats %+v: want nothing succeeded", s)
		}
		res, err := e.s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: id, LeaseID: claimed[0].LeaseID, Now: &later}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("worker B's complete: %v, %v", res, err)
		}
		types := e.events(id)
		if n := slices.Index(types, "succeeded"); n != len(types)-1 || slices.Contains(types[:n], "succeeded") {
			t.Errorf("events %v: want exactly one succeeded, last", types)
		}
	})
}
