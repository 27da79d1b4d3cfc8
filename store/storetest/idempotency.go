package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// requestCase is an operation that carries a request id, performed once
// from state from and then repeated.
type requestCase struct {
	name string
	from lifecycle.State
	opts []specOpt
	wait time.Duration
	// do performs the operation with request id rid at time at.
	do func(h *harness, f fixture, rid string, at *time.Time) (store.Job, error)
}

// requestCases cover every Store method that takes a request id.
func requestCases() []requestCase {
	ownerDo := func(call func(h *harness, p store.OwnerParams) (store.Job, error)) func(*harness, fixture, string, *time.Time) (store.Job, error) {
		return func(h *harness, f fixture, rid string, at *time.Time) (store.Job, error) {
			return call(h, store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, RequestID: rid, Now: at})
		}
	}
	applyDo := func(cmd func(fixture) lifecycle.Command) func(*harness, fixture, string, *time.Time) (store.Job, error) {
		return func(h *harness, f fixture, rid string, at *time.Time) (store.Job, error) {
			c := cmd(f)
			c.RequestID = rid
			return h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: c, Now: at})
		}
	}
	cancelDo := func(hard bool) func(*harness, fixture, string, *time.Time) (store.Job, error) {
		return func(h *harness, f fixture, rid string, at *time.Time) (store.Job, error) {
			return h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, RequestID: rid, Now: at})
		}
	}
	return []requestCase{
		{name: "start", from: lifecycle.Claimed, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) { return h.s.JobStart(h.ctx, &p) })},
		{name: "heartbeat", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: p, LeaseTTL: leaseTTL})
		})},
		{name: "checkpoint", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: p, Checkpoint: json.RawMessage(`{"page":3}`), Steps: 1})
		})},
		{name: "checkpoint_that_halts", from: lifecycle.Running, opts: []specOpt{stepBudget(1)}, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: p, Steps: 5})
		})},
		{name: "complete", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: p, Result: json.RawMessage(`{"n":1}`)}})
			if err != nil {
				return store.Job{}, err
			}
			return res[0].Job, res[0].Err
		})},
		{name: "fail", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: p, Error: lifecycle.JobError{Code: "network", Message: "reset"}})
		})},
		{name: "halt", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobHalt(h.ctx, &store.JobHaltParams{OwnerParams: p, ReasonCode: "step_limit"})
		})},
		{name: "release", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: p})
		})},
		{name: "ack_cancel", from: lifecycle.CancelRequested, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) { return h.s.JobAckCancel(h.ctx, &p) })},
		{name: "dead_letter_by_owner", from: lifecycle.Running, do: ownerDo(func(h *harness, p store.OwnerParams) (store.Job, error) {
			return h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: p, ReasonCode: lifecycle.ReasonParseError})
		})},
		{name: "dead_letter_by_system", from: lifecycle.Queued, do: func(h *harness, f fixture, rid string, at *time.Time) (store.Job, error) {
			return h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: f.ID, RequestID: rid, Now: at}, ReasonCode: lifecycle.ReasonParseError})
		}},
		{name: "cancel_soft_queued", from: lifecycle.Queued, do: cancelDo(false)},
		{name: "cancel_soft_running", from: lifecycle.Running, do: cancelDo(false)},
		{name: "cancel_hard", from: lifecycle.Running, do: cancelDo(true)},
		{name: "apply_promote", from: lifecycle.Scheduled, wait: 2 * time.Hour, do: applyDo(sys(lifecycle.OpPromote))},
		{name: "apply_unblock", from: lifecycle.Blocked, do: applyDo(sys(lifecycle.OpUnblock))},
		{name: "apply_requeue", from: lifecycle.Stalled, do: applyDo(sys(lifecycle.OpRequeue))},
		{name: "apply_heartbeat", from: lifecycle.Claimed, do: applyDo(with(own(lifecycle.OpHeartbeat), func(c *lifecycle.Command) { c.LeaseTTL = leaseTTL }))},
		{name: "apply_claim", from: lifecycle.Queued, do: applyDo(as(lifecycle.OpClaim, lifecycle.ActorOwner))},
	}
}

// testIdempotency checks request ids and repeats whose result already holds.
func testIdempotency(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, c := range requestCases() {
		t.Run("repeat_request_id/"+c.name, func(t *testing.T) {
			t.Parallel()
			testRepeatRequest(t, newStore, c)
		})
		if c.from == lifecycle.Blocked {
			continue // a blocked job is a run's, whose creation takes no request id to reuse
		}
		t.Run("reuse_request_id_for_another_op/"+c.name, func(t *testing.T) {
			t.Parallel()
			testRequestConflict(t, newStore, c)
		})
	}
	t.Run("reuse_request_id_for_another_op/pairs", func(t *testing.T) { t.Parallel(); testRequestConflictPairs(t, newStore) })
	t.Run("request_ids_are_per_job", func(t *testing.T) { t.Parallel(); testRequestPerJob(t, newStore) })
	t.Run("repeat_enqueue_request_id", func(t *testing.T) { t.Parallel(); testRepeatEnqueue(t, newStore) })
	t.Run("enqueue_request_id_scope", func(t *testing.T) { t.Parallel(); testEnqueueRequestScope(t, newStore) })
	t.Run("repeat_without_request_id", func(t *testing.T) { t.Parallel(); testRepeatWithoutRequest(t, newStore) })
	t.Run("expected_rev_matches", func(t *testing.T) { t.Parallel(); testExpectedRevMatches(t, newStore) })
	t.Run("repeat_complete_batch", func(t *testing.T) { t.Parallel(); testRepeatCompleteBatch(t, newStore) })
}

// testRepeatRequest: the same request id again, even much later and after
// the job moved on, returns the current record with no new event and no
// rev change.
func testRepeatRequest(t *testing.T, newStore func(*testing.T) store.Store, c requestCase) {
	h := newHarness(t, newStore)
	f := h.build(c.from, c.opts...)
	h.advance(c.wait)
	first, err := c.do(h, f, "req-1", h.tick())
	if err != nil {
		t.Fatalf("first request: %v", err)
	}
	s1 := h.snap(f.ID)
	if !sameJob(first, s1.Job) || s1.Events[len(s1.Events)-1].RequestID != "req-1" {
		t.Fatalf("first request: returned %s, stored %s, last event request id %q",
			asJSON(first), asJSON(s1.Job), s1.Events[len(s1.Events)-1].RequestID)
	}
	for _, later := range []time.Duration{0, time.Minute, 3 * time.Hour} {
		h.advance(later)
		again, err := c.do(h, f, "req-1", h.tick())
		if err != nil {
			t.Fatalf("repeat %s later: %v", later, err)
		}
		if !sameJob(again, s1.Job) {
			t.Errorf("repeat %s later returned %s, want the same record %s", later, asJSON(again), asJSON(s1.Job))
		}
		h.unchanged(s1)
	}
	// The job moves on (when it can); the old request id still names the
	// old request: no-op, returning the record as it is now.
	if s1.Job.State.Terminal() {
		return
	}
	if _, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: true, RequestID: "req-2", Now: h.tick()}); err != nil {
		t.Fatalf("hard cancel: %v", err)
	}
	s2 := h.snap(f.ID)
	again, err := c.do(h, f, "req-1", h.tick())
	if err != nil || !sameJob(again, s2.Job) {
		t.Errorf("repeat after the job moved on: %v, returned %s, want the current record %s", err, asJSON(again), asJSON(s2.Job))
	}
	h.unchanged(s2)
}

// testRequestConflict: a request id already used on a job (here by its
// enqueue), presented for another op, is refused with ErrRequestConflict.
func testRequestConflict(t *testing.T, newStore func(*testing.T) store.Store, c requestCase) {
	h := newHarness(t, newStore)
	h.requestID = "req-x"
	f := h.build(c.from, c.opts...)
	h.advance(c.wait)
	before, count := h.snap(f.ID), h.census()
	_, err := c.do(h, f, "req-x", h.tick())
	rejected(t, err, store.ErrRequestConflict)
	h.unchanged(before)
	if after := h.census(); after != count {
		t.Errorf("the store went from %+v to %+v", count, after)
	}
}

// testRequestConflictPairs: a request id used for one op, then another.
func testRequestConflictPairs(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	if _, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, RequestID: "r", Now: h.tick()}, LeaseTTL: leaseTTL}); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	before := h.snap(f.ID)
	_, err := h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, RequestID: "r", Now: h.tick()}})
	rejected(t, err, store.ErrRequestConflict)
	h.unchanged(before)
	if _, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, RequestID: "c", Now: h.tick()}); err != nil {
		t.Fatalf("soft cancel: %v", err)
	}
	before = h.snap(f.ID)
	_, err = h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: true, RequestID: "c", Now: h.tick()})
	rejected(t, err, store.ErrRequestConflict)
	h.unchanged(before)
}

// testRequestPerJob: the same request id on two jobs names two requests.
func testRequestPerJob(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	a, b := h.build(lifecycle.Queued), h.build(lifecycle.Queued)
	for _, f := range []fixture{a, b} {
		j, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, RequestID: "same", Now: h.tick()})
		if err != nil || j.State != lifecycle.Cancelled {
			t.Fatalf("cancel %s with request id \"same\": state %s, err %v", f.ID, j.State, err)
		}
	}
}

// testRepeatEnqueue: enqueue is a transition (∅ → queued), and DESIGN.md
// makes a repeated request id an idempotent no-op that returns the current
// record. A producer that retries an enqueue after a lost reply, with the
// same request id, must get the same job back, not a second one.
func testRepeatEnqueue(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	at := h.tick()
	spec := h.spec(*at)
	first, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, RequestID: "enqueue-1", Now: at})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	count := h.census()
	again, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, RequestID: "enqueue-1", Now: h.tick()})
	if err != nil {
		t.Fatalf("repeated enqueue: %v", err)
	}
	if again[0].Job.ID != first[0].Job.ID {
		t.Errorf("the repeated enqueue (same request id) created job %s beside %s; want the same job back", again[0].Job.ID, first[0].Job.ID)
	}
	if after := h.census(); after != count {
		t.Errorf("the repeated enqueue wrote: the store went from %+v to %+v", count, after)
	}
}

// testEnqueueRequestScope: an enqueue request id belongs to one tenant and
// one producer (another's same id makes its own job), and reusing it for a
// different job is ErrRequestConflict and writes nothing.
func testEnqueueRequestScope(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	at := h.tick()
	acme, globex := h.spec(*at), h.spec(*at)
	acme.Tenant, globex.Tenant = "acme", "globex"
	enq := func(spec lifecycle.Spec, actor string) ([]store.EnqueueResult, error) {
		return h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: actor, RequestID: "r-1", Now: h.tick()})
	}
	a, err := enq(acme, "p1")
	if err != nil {
		t.Fatalf("enqueue for acme: %v", err)
	}
	for _, c := range []struct {
		spec  lifecycle.Spec
		actor string
	}{{globex, "p1"}, {acme, "p2"}} {
		g, err := enq(c.spec, c.actor)
		if err != nil || g[0].Existing || g[0].Job.ID == a[0].Job.ID {
			t.Fatalf("tenant %s, producer %s, same request id: %+v, %v; want a new job of its own", c.spec.Tenant, c.actor, g, err)
		}
	}
	count := h.census()
	other := acme
	other.Kind = acme.Kind + "-other"
	if _, err := enq(other, "p1"); !errors.Is(err, store.ErrRequestConflict) {
		t.Fatalf("request id reused for another kind: %v, want ErrRequestConflict", err)
	}
	if after := h.census(); after != count {
		t.Errorf("the refused enqueue wrote: the store went from %+v to %+v", count, after)
	}
}

// testRepeatWithoutRequest: repeating an owner's completion, failure,
// acknowledgement or start with the same lease, or a client's cancel, after
// it succeeded is a no-op returning the same record.
func testRepeatWithoutRequest(t *testing.T, newStore func(*testing.T) store.Store) {
	cases := []struct {
		name string
		from lifecycle.State
		call string
	}{
		{"complete", lifecycle.Running, "complete"},
		{"complete_while_cancel_requested", lifecycle.CancelRequested, "complete"},
		{"ack_cancel", lifecycle.CancelRequested, "ack_cancel"},
		{"fail", lifecycle.Running, "fail"},
		{"start", lifecycle.Claimed, "start"},
		{"release", lifecycle.Running, "release"},
		{"halt", lifecycle.Running, "halt"},
		{"dead_letter", lifecycle.Running, "dead_letter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(c.from)
			if err := ownerCalls[c.call](h, f, h.tick()); err != nil {
				t.Fatalf("first %s: %v", c.call, err)
			}
			before := h.snap(f.ID)
			h.advance(time.Minute)
			if err := ownerCalls[c.call](h, f, h.tick()); err != nil {
				t.Fatalf("repeated %s: %v, want a no-op", c.call, err)
			}
			h.unchanged(before)
		})
	}
	for _, hard := range []bool{false, true} {
		t.Run(map[bool]string{false: "cancel_soft", true: "cancel_hard"}[hard], func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(lifecycle.Running)
			h.cancel(f, hard)
			before := h.snap(f.ID)
			j, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, Now: h.tick()})
			if err != nil || !sameJob(j, before.Job) {
				t.Fatalf("repeated cancel: %v, returned %s, want %s", err, asJSON(j), asJSON(before.Job))
			}
			h.unchanged(before)
		})
	}
}

// testExpectedRevMatches: a request whose ExpectedRev is the job's rev goes
// through.
func testExpectedRevMatches(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	rev := h.get(f.ID).Rev
	j, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, ExpectedRev: &rev, Now: h.tick()})
	if err != nil || j.State != lifecycle.CancelRequested || j.Rev != rev+1 {
		t.Fatalf("cancel at the expected rev: state %s rev %d err %v", j.State, j.Rev, err)
	}
	rev = j.Rev
	j, err = h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: lifecycle.Command{Op: lifecycle.OpCancelHard, Actor: lifecycle.ActorClient}, ExpectedRev: &rev, Now: h.tick()})
	if err != nil || j.State != lifecycle.Cancelled {
		t.Fatalf("hard cancel at the expected rev: state %s err %v", j.State, err)
	}
}
