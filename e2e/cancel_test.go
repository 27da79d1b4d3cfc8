package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestSoftCancelAcknowledged: a soft cancel of a running job reaches the
// handler at its next heartbeat (context cause ErrCancelRequested); the
// handler returns and the pool acknowledges: cancelled by the owner.
func TestSoftCancelAcknowledged(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.soft-cancel"
		e.maintain()
		g := e.newGate(false)
		e.startPool(e.poolConfig("worker"), kind, g.work)
		job := e.enqueue(stint.Spec{Kind: kind, CancelGrace: time.Hour}) // the owner, not the deadline, ends it
		e.awaitStart(g)

		j, err := e.client.Cancel(context.Background(), job.ID, stint.CancelSoft, "the user changed their mind")
		if err != nil || j.State != stint.CancelRequested {
			t.Fatalf("soft cancel: %s, %v; want cancel_requested", j.State, err)
		}
		j = e.untilState(job.ID, stint.Cancelled, e.step())
		if !errors.Is(g.cause(), stint.ErrCancelRequested) {
			t.Errorf("the handler's context was cancelled with %v, want ErrCancelRequested", g.cause())
		}
		evs := e.wantTypes(job.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
			lifecycle.EventCancelRequested, lifecycle.EventCancelled)
		if ev := lastEvent(evs, lifecycle.EventCancelled); ev.Op != lifecycle.OpAckCancel || ev.Actor != lifecycle.ActorOwner {
			t.Errorf("cancelled by %s/%s, want ack_cancel by the owner", ev.Op, ev.Actor)
		}
		if j.ReasonCode != lifecycle.ReasonCancelled || j.Reason != "the user changed their mind" {
			t.Errorf("reason %q %q", j.ReasonCode, j.Reason)
		}
	})
}

// TestSoftCancelNeverAcknowledged: a handler that ignores its context never
// acknowledges the cancel; the cancel finalizer cancels the job at its
// cancel deadline and revokes the lease, so what the handler reports when
// it finally returns is rejected.
func TestSoftCancelNeverAcknowledged(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.soft-cancel-ignored"
		e.maintain()
		g := e.newGate(true)
		p := e.startPool(e.poolConfig("worker"), kind, g.work)
		grace := e.pick(30*time.Second, time.Second)
		job := e.enqueue(stint.Spec{Kind: kind, CancelGrace: grace})
		e.awaitStart(g)

		j, err := e.client.Cancel(context.Background(), job.ID, stint.CancelSoft, "")
		if err != nil || j.State != stint.CancelRequested || j.CancelDeadline == nil {
			t.Fatalf("soft cancel: %+v, %v; want cancel_requested with a deadline", j, err)
		}
		deadline := *j.CancelDeadline
		j = e.untilState(job.ID, stint.Cancelled, e.step())
		if j.ReasonCode != lifecycle.ReasonCancelDeadline || j.FinishedAt.Before(deadline) {
			t.Errorf("cancelled with reason %q at %v; want cancel_deadline, at %v or later", j.ReasonCode, j.FinishedAt, deadline)
		}
		evs := e.wantTypes(job.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
			lifecycle.EventCancelRequested, lifecycle.EventCancelled)
		if ev := lastEvent(evs, lifecycle.EventCancelled); ev.Op != lifecycle.OpForceCancel || ev.Actor != lifecycle.ActorSystem {
			t.Errorf("cancelled by %s/%s, want force_cancel by the system", ev.Op, ev.Actor)
		}

		g.open() // the handler returns nil at last: too late
		e.until("the pool to learn the job is gone", e.step(), func() bool { return p.Stats().Stale >= 1 })
		if after := e.get(job.ID); after.State != stint.Cancelled || after.Rev != j.Rev {
			t.Errorf("the late return changed the job: %s rev %d → %d", after.State, j.Rev, after.Rev)
		}
	})
}

// TestHardCancel: a hard cancel ends a running job at once and revokes its
// lease; the handler learns at its next heartbeat (ErrLeaseLost) and
// nothing it reports counts.
func TestHardCancel(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.hard-cancel"
		e.maintain()
		g := e.newGate(false)
		p := e.startPool(e.poolConfig("worker"), kind, g.work)
		job := e.enqueue(stint.Spec{Kind: kind})
		fence := e.awaitStart(g).Fence()

		j, err := e.client.Cancel(context.Background(), job.ID, stint.CancelHard, "stop now")
		if err != nil || j.State != stint.Cancelled {
			t.Fatalf("hard cancel: %s, %v; want cancelled at once", j.State, err)
		}
		e.until("the handler to learn its lease is gone", e.step(), func() bool { return g.cause() != nil })
		if !errors.Is(g.cause(), stint.ErrLeaseLost) {
			t.Errorf("the handler's context was cancelled with %v, want ErrLeaseLost", g.cause())
		}
		evs := e.wantTypes(job.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventCancelled)
		if ev := lastEvent(evs, lifecycle.EventCancelled); ev.Op != lifecycle.OpCancelHard || ev.Actor != lifecycle.ActorClient {
			t.Errorf("cancelled by %s/%s, want cancel_hard by the client", ev.Op, ev.Actor)
		}
		res, err := e.s.JobComplete(context.Background(), []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: job.ID, LeaseID: fence.LeaseID}}})
		if err != nil || !errors.Is(res[0].Err, stint.ErrStaleLease) {
			t.Errorf("complete with the revoked lease: %v %+v; want ErrStaleLease", err, res)
		}
		if st := p.Stats(); st.Succeeded != 0 || st.Failed != 0 {
			t.Errorf("the pool reported an outcome for a cancelled job: %+v", st)
		}
		if after := e.get(job.ID); after.Rev != j.Rev {
			t.Errorf("the job changed after its hard cancel: rev %d → %d", j.Rev, after.Rev)
		}
	})
}
