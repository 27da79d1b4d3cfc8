package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testFencing checks that a worker whose lease was lost is fenced: every
// owner op it sends afterwards is refused with ErrStaleLease and changes
// nothing, while the worker that holds the job now proceeds.
func testFencing(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("reclaimed_by_another_worker", func(t *testing.T) { t.Parallel(); testReclaimed(t, newStore) })
	t.Run("lease_expiry_is_judged_by_the_store_clock", func(t *testing.T) { t.Parallel(); testExpiryBoundary(t, newStore) })
	t.Run("heartbeat_keeps_the_lease", func(t *testing.T) { t.Parallel(); testHeartbeatKeeps(t, newStore) })
	t.Run("soft_cancel_keeps_the_lease", func(t *testing.T) { t.Parallel(); testSoftCancelKeeps(t, newStore) })
	t.Run("batch_complete_fences_each_item", func(t *testing.T) { t.Parallel(); testBatchFencing(t, newStore) })
	// A late message from an owner whose lease the system took away is
	// stale even when the job already sits in the state the message asks
	// for: that state was reached by someone else, so it is no repeat.
	late := []struct {
		name string
		opts []specOpt
		take func(h *harness, f fixture) // the system takes the job away
		call string
	}{
		{"fail_after_reaper_dead_lettered", []specOpt{maxAttempts(1)}, func(h *harness, f fixture) {
			h.advance(2 * leaseTTL)
			h.pass(store.Store.JobStallExpired, 1)
			h.pass(store.Store.JobRequeueStalled, 1)
			h.must(f.ID, lifecycle.DeadLettered)
		}, "fail"},
		{"fail_after_attempt_timed_out", []specOpt{timeoutOf(time.Minute)}, func(h *harness, f fixture) {
			h.advance(2 * time.Minute)
			h.pass(store.Store.JobTimeOutDue, 1)
			h.must(f.ID, lifecycle.Retrying)
		}, "fail"},
		{"release_after_reaper_stalled", nil, func(h *harness, f fixture) {
			h.advance(2 * leaseTTL)
			h.pass(store.Store.JobStallExpired, 1)
			h.must(f.ID, lifecycle.Stalled)
		}, "release"},
		{"ack_cancel_after_force_cancel", nil, func(h *harness, f fixture) {
			h.cancel(f, false)
			h.advance(2 * lifecycle.DefaultCancelGrace)
			h.pass(store.Store.JobForceCancelDue, 1)
			h.must(f.ID, lifecycle.Cancelled)
		}, "ack_cancel"},
		{"dead_letter_after_system_dead_lettered", nil, func(h *harness, f fixture) {
			h.system(f, lifecycle.Command{Op: lifecycle.OpDeadLetter, ReasonCode: lifecycle.ReasonPolicyViolation})
			h.must(f.ID, lifecycle.DeadLettered)
		}, "dead_letter"},
	}
	for _, c := range late {
		t.Run("late_"+c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(lifecycle.Running, c.opts...)
			c.take(h, f)
			before := h.snap(f.ID)
			rejected(t, ownerCalls[c.call](h, f, h.tick()), store.ErrStaleLease)
			h.unchanged(before)
		})
	}
}

// pass runs one maintenance pass at the harness's next tick and fails the
// test unless it changed want jobs.
func (h *harness) pass(fn func(store.Store, context.Context, *store.MaintainParams) (int, error), want int) {
	h.t.Helper()
	n, err := fn(h.s, h.ctx, &store.MaintainParams{ActorID: "reaper", Now: h.tick()})
	if err != nil || n != want {
		h.t.Fatalf("maintenance pass: changed %d jobs, err %v; want %d", n, err, want)
	}
}

// testReclaimed: A claims, its lease expires, the reaper stalls and
// requeues the job, B claims it. A is fenced; B completes.
func testReclaimed(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	a := h.build(lifecycle.Running)
	h.advance(leaseTTL)
	h.pass(store.Store.JobStallExpired, 1)
	h.pass(store.Store.JobRequeueStalled, 1)
	b := a
	h.claim(&b)
	if b.Lease == a.Lease || b.Worker == a.Worker {
		t.Fatalf("the second claim reused lease %s / worker %s", b.Lease, b.Worker)
	}
	h.start(b)
	j := h.must(b.ID, lifecycle.Running)
	if j.Attempt != 2 || j.LeaseID != b.Lease || j.Owner != b.Worker {
		t.Fatalf("after the re-claim: attempt %d lease %s owner %s; want 2, %s, %s", j.Attempt, j.LeaseID, j.Owner, b.Lease, b.Worker)
	}
	h.fenced(a, "heartbeat", "checkpoint", "complete", "fail", "halt", "release", "dead_letter", "start")
	h.complete(b)
	done := h.must(b.ID, lifecycle.Succeeded)
	if done.LastOwner != b.Worker {
		t.Errorf("last_owner %s, want %s", done.LastOwner, b.Worker)
	}
	h.fenced(a, "complete", "fail", "ack_cancel", "release")
	checkJob(t, h.snap(b.ID))
}

// fenced checks that each owner call by f's (stale) lease is refused with
// ErrStaleLease and changes nothing.
func (h *harness) fenced(f fixture, calls ...string) {
	h.t.Helper()
	for _, call := range calls {
		before := h.snap(f.ID)
		if p := rejectionProblem(ownerCalls[call](h, f, h.tick()), store.ErrStaleLease); p != "" {
			h.t.Errorf("%s by the stale lease %s: %s", call, f.Lease, p)
		}
		h.unchanged(before)
	}
}

// testExpiryBoundary: a lease is valid strictly before lease_expires_at and
// stale from that instant on, judged by the Now the store is given.
func testExpiryBoundary(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	exp := *h.get(f.ID).LeaseExpiresAt
	justBefore := exp.Add(-time.Microsecond)
	if _, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, &justBefore), LeaseTTL: time.Minute}); err != nil {
		t.Fatalf("heartbeat 1µs before expiry: %v", err)
	}
	exp = *h.get(f.ID).LeaseExpiresAt
	if want := justBefore.Add(time.Minute); !exp.Equal(want) {
		t.Fatalf("heartbeat set lease_expires_at %s, want %s", exp, want)
	}
	before := h.snap(f.ID)
	_, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, &exp), LeaseTTL: time.Minute})
	rejected(t, err, store.ErrStaleLease)
	h.unchanged(before)
	// The reaper, at the same instant, sees the lease as expired too.
	n, err := h.s.JobStallExpired(h.ctx, &store.MaintainParams{Now: &exp})
	if err != nil || n != 1 {
		t.Fatalf("stall at expiry: %d, %v", n, err)
	}
}

// testHeartbeatKeeps: heartbeats extend the lease, each one an event, so a
// reaper pass that would have stalled the job finds nothing to do.
func testHeartbeatKeeps(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	for i := 0; i < 5; i++ {
		h.advance(leaseTTL - time.Minute)
		j, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL, Progress: json.RawMessage(`{"done":1}`)})
		if err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		if j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.Equal(h.now.Add(leaseTTL)) {
			t.Fatalf("heartbeat %d: lease expires at %v, want %s", i, j.LeaseExpiresAt, h.now.Add(leaseTTL))
		}
		if n, err := h.s.JobStallExpired(h.ctx, &store.MaintainParams{Now: h.tick()}); err != nil || n != 0 {
			t.Fatalf("reaper after heartbeat %d stalled %d jobs (err %v)", i, n, err)
		}
	}
	h.complete(f)
	s := h.snap(f.ID)
	if s.Job.Rev != 9 { // enqueued, claimed, started, 5 heartbeats, succeeded
		t.Errorf("rev %d, want 9: every heartbeat is an accepted mutation", s.Job.Rev)
	}
	checkJob(t, s)
}

// testSoftCancelKeeps: a soft cancel leaves the owner its lease; its
// heartbeats go on (and report the cancel), and it may still complete.
func testSoftCancelKeeps(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.CancelRequested)
	j, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL})
	if err != nil || j.State != lifecycle.CancelRequested {
		t.Fatalf("heartbeat while cancel_requested: state %s, err %v; want the owner told of the cancel", j.State, err)
	}
	h.complete(f)
	checkJob(t, h.snap(f.ID))
}

// testBatchFencing: one JobComplete call with a live lease, a stale lease
// and an unknown job settles each on its own.
func testBatchFencing(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	good, stale := h.build(lifecycle.Running), h.build(lifecycle.Running)
	staleBefore := h.snap(stale.ID)
	at := h.tick()
	res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{
		{OwnerParams: ownerAt(good, at), Result: json.RawMessage(`1`)},
		{OwnerParams: store.OwnerParams{JobID: stale.ID, LeaseID: "lease-of-another-worker", Now: at}, Result: json.RawMessage(`2`)},
		{OwnerParams: store.OwnerParams{JobID: "no-such-job", LeaseID: "x", Now: at}},
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("batch complete: %d results, %v", len(res), err)
	}
	if res[0].Err != nil || res[0].Job.State != lifecycle.Succeeded {
		t.Errorf("item 1: %v, state %s; want succeeded", res[0].Err, res[0].Job.State)
	}
	rejected(t, res[1].Err, store.ErrStaleLease)
	rejected(t, res[2].Err, store.ErrNotFound)
	h.unchanged(staleBefore)
	checkJob(t, h.snap(good.ID))
}
