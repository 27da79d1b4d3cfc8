package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// rejection is a request the store must refuse with the typed error want,
// changing nothing: the job built in state from (with opts), prep run on it,
// the clock moved by wait, then do.
type rejection struct {
	name string
	from lifecycle.State
	opts []specOpt
	prep func(h *harness, f *fixture)
	wait time.Duration
	do   func(h *harness, f fixture, at *time.Time) error
	want error
}

// testRejections checks that every kind of refused request returns its
// typed error and leaves the job row, its event log and the rest of the
// store exactly as they were.
func testRejections(t *testing.T, newStore func(*testing.T) store.Store) {
	groups := map[string][]rejection{
		"WrongActor": wrongActorCases(),
		"StaleLease": staleLeaseCases(),
		"Revision":   revisionCases(),
		"Validation": validationCases(),
		"NotFound":   notFoundCases(),
	}
	for name, cases := range groups {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, newStore)
				})
			}
		})
	}
	t.Run("EnqueueValidation", func(t *testing.T) { t.Parallel(); testEnqueueValidation(t, newStore) })
	t.Run("ClaimValidation", func(t *testing.T) { t.Parallel(); testClaimValidation(t, newStore) })
}

func (c rejection) run(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	bystander := h.build(lifecycle.Running) // must not be touched either
	f := h.build(c.from, c.opts...)
	if c.prep != nil {
		c.prep(h, &f)
	}
	h.advance(c.wait)
	before, other, count := h.snap(f.ID), h.snap(bystander.ID), h.census()
	err := c.do(h, f, h.tick())
	rejected(t, err, c.want)
	h.unchanged(before)
	h.unchanged(other)
	if after := h.census(); after != count {
		t.Errorf("the store went from %+v to %+v", count, after)
	}
}

// apply sends cmd through JobApply.
func apply(cmd func(f fixture) lifecycle.Command) func(*harness, fixture, *time.Time) error {
	return func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: cmd(f), Now: at})
		return err
	}
}

// as returns the command op by actor, carrying f's lease when the actor is
// the owner and whatever a well-formed command of op needs.
func as(op lifecycle.Op, actor lifecycle.Actor) func(f fixture) lifecycle.Command {
	return func(f fixture) lifecycle.Command {
		c := lifecycle.Command{Op: op, Actor: actor, ActorID: "someone", LeaseID: f.Lease, LeaseTTL: leaseTTL, ReasonCode: lifecycle.ReasonPolicyViolation}
		if actor == lifecycle.ActorOwner && c.LeaseID == "" {
			c.LeaseID = "lease-never-granted"
		}
		if op == lifecycle.OpClaim && actor != lifecycle.ActorOwner {
			c.LeaseID = "lease-new"
		}
		c.StepSeq, c.StepName = 1, "step" // step and suspend are well formed: the state decides
		wake := epoch.Add(72 * time.Hour)
		c.WakeAt = &wake
		return c
	}
}

// wrongActorCases send ops from a state the table allows, by an actor it
// does not list for them. An actor that may never perform an op makes the
// request malformed, whatever the state: ErrValidation.
func wrongActorCases() []rejection {
	c := func(op lifecycle.Op, actor lifecycle.Actor, from lifecycle.State, wait time.Duration, opts ...specOpt) rejection {
		return rejection{name: string(op) + "_by_" + string(actor), from: from, opts: opts, wait: wait, do: apply(as(op, actor)), want: store.ErrValidation}
	}
	return []rejection{
		c(lifecycle.OpPromote, lifecycle.ActorClient, lifecycle.Scheduled, 2*time.Hour),
		c(lifecycle.OpPromote, lifecycle.ActorOwner, lifecycle.Retrying, 2*time.Hour),
		c(lifecycle.OpUnblock, lifecycle.ActorClient, lifecycle.Blocked, 0),
		c(lifecycle.OpClaim, lifecycle.ActorSystem, lifecycle.Queued, 0),
		c(lifecycle.OpClaim, lifecycle.ActorClient, lifecycle.Queued, 0),
		c(lifecycle.OpStart, lifecycle.ActorClient, lifecycle.Claimed, 0),
		c(lifecycle.OpStart, lifecycle.ActorSystem, lifecycle.Claimed, 0),
		c(lifecycle.OpHeartbeat, lifecycle.ActorSystem, lifecycle.Running, 0),
		c(lifecycle.OpCheckpoint, lifecycle.ActorClient, lifecycle.Running, 0),
		c(lifecycle.OpComplete, lifecycle.ActorSystem, lifecycle.Running, 0),
		c(lifecycle.OpComplete, lifecycle.ActorClient, lifecycle.Running, 0),
		c(lifecycle.OpFail, lifecycle.ActorSystem, lifecycle.Running, 0),
		c(lifecycle.OpHalt, lifecycle.ActorClient, lifecycle.Running, 0),
		c(lifecycle.OpStall, lifecycle.ActorClient, lifecycle.Running, 2*time.Hour),
		c(lifecycle.OpRequeue, lifecycle.ActorOwner, lifecycle.Stalled, 0),
		c(lifecycle.OpRequeue, lifecycle.ActorClient, lifecycle.Stalled, 0),
		c(lifecycle.OpDeadLetter, lifecycle.ActorClient, lifecycle.Queued, 0),
		c(lifecycle.OpCancel, lifecycle.ActorOwner, lifecycle.Running, 0),
		c(lifecycle.OpCancel, lifecycle.ActorSystem, lifecycle.Queued, 0),
		c(lifecycle.OpCancelHard, lifecycle.ActorSystem, lifecycle.Running, 0),
		c(lifecycle.OpAckCancel, lifecycle.ActorSystem, lifecycle.CancelRequested, 0),
		c(lifecycle.OpAckCancel, lifecycle.ActorClient, lifecycle.CancelRequested, 0),
		c(lifecycle.OpForceCancel, lifecycle.ActorClient, lifecycle.CancelRequested, 2*time.Hour),
		c(lifecycle.OpForceCancel, lifecycle.ActorOwner, lifecycle.CancelRequested, 2*time.Hour),
		c(lifecycle.OpTimeOut, lifecycle.ActorClient, lifecycle.Running, 2*time.Hour, deadlineIn(time.Hour)),
		c(lifecycle.OpTimeOut, lifecycle.ActorOwner, lifecycle.Running, 2*time.Hour, deadlineIn(time.Hour)),
	}
}

// ownerCalls are the owner operations of the Store, each presenting f.Lease.
var ownerCalls = map[string]func(h *harness, f fixture, at *time.Time) error{
	"start": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobStart(h.ctx, &store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: at})
		return err
	},
	"heartbeat": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, at), LeaseTTL: leaseTTL})
		return err
	},
	"checkpoint": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: ownerAt(f, at), Checkpoint: json.RawMessage(`{"page":9}`)})
		return err
	},
	"complete": func(h *harness, f fixture, at *time.Time) error {
		res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt(f, at), Result: json.RawMessage(`"late"`)}})
		if err != nil {
			return err
		}
		return res[0].Err
	},
	"fail": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: ownerAt(f, at), Error: lifecycle.JobError{Code: "network", Message: "late"}})
		return err
	},
	"halt": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobHalt(h.ctx, &store.JobHaltParams{OwnerParams: ownerAt(f, at), ReasonCode: "step_limit"})
		return err
	},
	"release": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: ownerAt(f, at)})
		return err
	},
	"ack_cancel": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobAckCancel(h.ctx, &store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: at})
		return err
	},
	"dead_letter": func(h *harness, f fixture, at *time.Time) error {
		_, err := h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: ownerAt(f, at), ReasonCode: lifecycle.ReasonParseError})
		return err
	},
}

// staleLeaseCases present a lease that is not the job's live one: another
// worker's, an expired one, a released one, one a hard cancel revoked.
func staleLeaseCases() []rejection {
	var out []rejection
	add := func(name string, from lifecycle.State, prep func(*harness, *fixture), wait time.Duration, calls ...string) {
		for _, call := range calls {
			out = append(out, rejection{name: name + "/" + call, from: from, prep: prep, wait: wait, do: ownerCalls[call], want: store.ErrStaleLease})
		}
	}
	other := func(_ *harness, f *fixture) { f.Lease = "lease-of-another-worker" }
	add("other_lease", lifecycle.Claimed, other, 0, "start", "heartbeat", "release", "dead_letter")
	add("other_lease", lifecycle.Running, other, 0, "heartbeat", "checkpoint", "complete", "fail", "halt", "release", "dead_letter")
	add("other_lease", lifecycle.CancelRequested, other, 0, "heartbeat", "complete", "fail", "ack_cancel")
	// Expired by the store's clock (the Now passed), before any reaper ran.
	add("expired", lifecycle.Claimed, nil, leaseTTL, "start", "heartbeat")
	add("expired", lifecycle.Running, nil, leaseTTL, "heartbeat", "checkpoint", "complete", "fail", "halt", "dead_letter")
	add("expired", lifecycle.CancelRequested, nil, leaseTTL, "heartbeat", "complete", "ack_cancel")
	released := func(h *harness, f *fixture) { h.release(*f) }
	add("released", lifecycle.Running, released, 0, "start", "heartbeat", "checkpoint", "complete", "fail", "halt", "ack_cancel", "dead_letter")
	revoked := func(h *harness, f *fixture) { h.cancel(*f, true) }
	add("revoked_by_hard_cancel", lifecycle.Running, revoked, 0, "heartbeat", "checkpoint", "complete", "fail", "halt", "release", "dead_letter")
	add("revoked_by_hard_cancel", lifecycle.CancelRequested, revoked, 0, "heartbeat", "complete", "fail", "ack_cancel")
	return out
}

// revisionCases present an ExpectedRev the job is not at.
func revisionCases() []rejection {
	cancelAt := func(delta int64, hard bool) func(*harness, fixture, *time.Time) error {
		return func(h *harness, f fixture, at *time.Time) error {
			rev := h.get(f.ID).Rev + delta
			_, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, ExpectedRev: &rev, Now: at})
			return err
		}
	}
	applyAt := func(delta int64, cmd func(fixture) lifecycle.Command) func(*harness, fixture, *time.Time) error {
		return func(h *harness, f fixture, at *time.Time) error {
			rev := h.get(f.ID).Rev + delta
			_, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: cmd(f), ExpectedRev: &rev, Now: at})
			return err
		}
	}
	r := func(name string, from lifecycle.State, do func(*harness, fixture, *time.Time) error, wait time.Duration) rejection {
		return rejection{name: name, from: from, do: do, wait: wait, want: store.ErrRevisionConflict}
	}
	return []rejection{
		r("cancel_behind", lifecycle.Queued, cancelAt(-1, false), 0),
		r("cancel_ahead", lifecycle.Running, cancelAt(+1, false), 0),
		r("hard_cancel_behind", lifecycle.Running, cancelAt(-1, true), 0),
		r("apply_promote_behind", lifecycle.Scheduled, applyAt(-1, sys(lifecycle.OpPromote)), 2*time.Hour),
		r("apply_heartbeat_behind", lifecycle.Running, applyAt(-1, with(own(lifecycle.OpHeartbeat), func(c *lifecycle.Command) { c.LeaseTTL = leaseTTL })), 0),
		r("apply_zero", lifecycle.Queued, applyAt(-1000, sys(lifecycle.OpDeadLetter)), 0),
	}
}

// validationCases send malformed requests about an existing job.
func validationCases() []rejection {
	v := func(name string, from lifecycle.State, do func(*harness, fixture, *time.Time) error) rejection {
		return rejection{name: name, from: from, do: do, want: store.ErrValidation}
	}
	cmd := func(edit func(*lifecycle.Command), base func(fixture) lifecycle.Command) func(*harness, fixture, *time.Time) error {
		return apply(with(base, edit))
	}
	return []rejection{
		v("dead_letter_bad_reason_code", lifecycle.Queued, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: f.ID, Now: at}, ReasonCode: "because"})
			return err
		}),
		v("dead_letter_no_reason_code", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: ownerAt(f, at)})
			return err
		}),
		v("heartbeat_no_ttl", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, at)})
			return err
		}),
		v("heartbeat_bad_progress_json", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, at), LeaseTTL: leaseTTL, Progress: json.RawMessage(`{50%}`)})
			return err
		}),
		v("complete_bad_result_json", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt(f, at), Result: json.RawMessage(`{"unterminated":`)}})
			if err != nil {
				return err
			}
			return res[0].Err
		}),
		v("complete_no_job_id", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{LeaseID: f.Lease, Now: at}}})
			return err
		}),
		v("checkpoint_bad_json", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: ownerAt(f, at), Checkpoint: json.RawMessage(`not json`)})
			return err
		}),
		v("checkpoint_negative_steps", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: ownerAt(f, at), Steps: -1})
			return err
		}),
		v("owner_op_without_lease", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobStart(h.ctx, &store.OwnerParams{JobID: f.ID, Now: at})
			return err
		}),
		v("empty_job_id", lifecycle.Running, func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{Now: at})
			return err
		}),
		v("apply_unknown_op", lifecycle.Queued, cmd(func(c *lifecycle.Command) { c.Op = "explode" }, sys(lifecycle.OpPromote))),
		v("apply_enqueue", lifecycle.Queued, cmd(func(c *lifecycle.Command) { c.Op, c.Actor = lifecycle.OpEnqueue, lifecycle.ActorClient }, sys(lifecycle.OpPromote))),
		v("apply_unknown_actor", lifecycle.Queued, cmd(func(c *lifecycle.Command) { c.Actor = "root" }, sys(lifecycle.OpDeadLetter))),
		v("apply_claim_without_worker", lifecycle.Queued, cmd(func(c *lifecycle.Command) { c.ActorID = "" }, as(lifecycle.OpClaim, lifecycle.ActorOwner))),
		v("apply_claim_without_ttl", lifecycle.Queued, cmd(func(c *lifecycle.Command) { c.LeaseTTL = 0 }, as(lifecycle.OpClaim, lifecycle.ActorOwner))),
	}
}

// notFoundCases name a job that does not exist; the store must not create it.
func notFoundCases() []rejection {
	missing := func(f fixture) fixture { f.ID = "no-such-job"; return f }
	n := func(call string) rejection {
		return rejection{name: call, from: lifecycle.Running, want: store.ErrNotFound,
			do: func(h *harness, f fixture, at *time.Time) error { return ownerCalls[call](h, missing(f), at) }}
	}
	out := []rejection{
		{name: "cancel", from: lifecycle.Queued, want: store.ErrNotFound, do: func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: "no-such-job", Now: at})
			return err
		}},
		{name: "apply", from: lifecycle.Queued, want: store.ErrNotFound, do: func(h *harness, f fixture, at *time.Time) error {
			_, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: "no-such-job", Command: sys(lifecycle.OpDeadLetter)(f), Now: at})
			return err
		}},
		{name: "get", from: lifecycle.Queued, want: store.ErrNotFound, do: func(h *harness, _ fixture, _ *time.Time) error {
			_, err := h.s.JobGet(h.ctx, "no-such-job")
			return err
		}},
		{name: "events", from: lifecycle.Queued, want: store.ErrNotFound, do: func(h *harness, _ fixture, _ *time.Time) error {
			_, err := h.s.JobEvents(h.ctx, "no-such-job")
			return err
		}},
		{name: "provenance", from: lifecycle.Queued, want: store.ErrNotFound, do: func(h *harness, _ fixture, _ *time.Time) error {
			_, err := h.s.JobProvenance(h.ctx, "no-such-job")
			return err
		}},
	}
	for call := range ownerCalls {
		out = append(out, n(call))
	}
	return out
}

// testEnqueueValidation sends malformed specs: the whole batch is refused
// and nothing is written, not even the valid specs beside the bad one.
func testEnqueueValidation(t *testing.T, newStore func(*testing.T) store.Store) {
	cases := []struct {
		name string
		edit func(s *lifecycle.Spec, now time.Time)
	}{
		{"bad_json_payload", func(s *lifecycle.Spec, _ time.Time) { s.Payload = json.RawMessage(`{"a":`) }},
		{"payload_too_large", func(s *lifecycle.Spec, _ time.Time) {
			s.Payload = json.RawMessage(`"` + string(make([]byte, lifecycle.MaxPayloadBytes)) + `"`)
		}},
		{"max_attempts_negative", func(s *lifecycle.Spec, _ time.Time) { s.MaxAttempts = -1 }},
		{"max_attempts_too_many", func(s *lifecycle.Spec, _ time.Time) { s.MaxAttempts = lifecycle.MaxMaxAttempts + 1 }},
		{"empty_kind", func(s *lifecycle.Spec, _ time.Time) { s.Kind = "" }},
		{"blank_kind", func(s *lifecycle.Spec, _ time.Time) { s.Kind = "   " }},
		{"priority_out_of_range", func(s *lifecycle.Spec, _ time.Time) { s.Priority = lifecycle.MaxPriority + 1 }},
		{"negative_timeout", func(s *lifecycle.Spec, _ time.Time) { s.Timeout = -time.Second }},
		{"deadline_in_the_past", func(s *lifecycle.Spec, now time.Time) { d := now.Add(-time.Second); s.Deadline = &d }},
		{"bad_on_exhausted", func(s *lifecycle.Spec, _ time.Time) { s.OnExhausted = lifecycle.Halted }},
		{"bad_topic", func(s *lifecycle.Spec, _ time.Time) { s.Topic = "job.*" }},
		{"negative_budget", func(s *lifecycle.Spec, _ time.Time) { s.Budget = &lifecycle.Budget{MaxSteps: -1} }},
		// Issue 7: input that one backend took and the other refused with a raw error.
		{"blank_queue", func(s *lifecycle.Spec, _ time.Time) { s.Queue = " \t" }},
		{"queue_with_space", func(s *lifecycle.Spec, _ time.Time) { s.Queue = "my queue" }},
		{"kind_with_control_char", func(s *lifecycle.Spec, _ time.Time) { s.Kind = "email\nsend" }},
		{"nul_in_kind", func(s *lifecycle.Spec, _ time.Time) { s.Kind = "send\x00mail" }},
		{"invalid_utf8_queue", func(s *lifecycle.Spec, _ time.Time) { s.Queue = "q\xff" }},
		{"nul_in_tenant", func(s *lifecycle.Spec, _ time.Time) { s.Tenant = "acme\x00" }},
		{"invalid_utf8_topic", func(s *lifecycle.Spec, _ time.Time) { s.Topic = "job.\xfe" }},
		{"nul_in_dedupe_key", func(s *lifecycle.Spec, _ time.Time) { s.DedupeKey = "k\x00" }},
		{"invalid_utf8_env", func(s *lifecycle.Spec, _ time.Time) { s.Env = map[string]string{"A": "\xff"} }},
		{"nul_in_depends_on", func(s *lifecycle.Spec, _ time.Time) { s.DependsOn = []string{"job\x00"} }},
		{"invalid_utf8_payload", func(s *lifecycle.Spec, _ time.Time) { s.Payload = json.RawMessage("{\"a\":\"\xff\"}") }},
		{"payload_too_deep", func(s *lifecycle.Spec, _ time.Time) {
			s.Payload = json.RawMessage(strings.Repeat("[", lifecycle.MaxJSONDepth+1) + strings.Repeat("]", lifecycle.MaxJSONDepth+1))
		}},
		{"run_at_after_9999", func(s *lifecycle.Spec, _ time.Time) { d := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC); s.RunAt = &d }},
		{"deadline_after_9999", func(s *lifecycle.Spec, _ time.Time) {
			d := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			s.Deadline = &d
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			live := h.build(lifecycle.Running, dedupeKey("acme", "k"))
			before, count := h.snap(live.ID), h.census()
			at := h.tick()
			good := h.spec(*at, dedupeKey("acme", "fresh"))
			bad := h.spec(*at, dedupeKey("acme", "k"))
			c.edit(&bad, *at)
			_, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{good, bad}, Now: at})
			rejected(t, err, store.ErrValidation)
			h.unchanged(before)
			if after := h.census(); after != count {
				t.Errorf("a refused batch wrote: the store went from %+v to %+v", count, after)
			}
			jobs, err := h.s.JobList(h.ctx, &store.JobListParams{Queue: good.Queue})
			if err != nil || len(jobs) != 0 {
				t.Errorf("the valid spec of a refused batch was written: %d jobs, err %v", len(jobs), err)
			}
		})
	}
	t.Run("batch_too_large", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		specs := make([]lifecycle.Spec, store.MaxBatch+1)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: "k"}
		}
		_, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: specs, Now: h.tick()})
		rejected(t, err, store.ErrValidation)
		if c := h.census(); c.Jobs != 0 {
			t.Errorf("a refused batch wrote %d jobs", c.Jobs)
		}
	})
	t.Run("empty_batch", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Now: h.tick()})
		rejected(t, err, store.ErrValidation)
		if c := h.census(); c.Jobs != 0 {
			t.Errorf("an empty batch wrote %d jobs", c.Jobs)
		}
	})
}

// testClaimValidation sends malformed claims: nothing is claimed.
func testClaimValidation(t *testing.T, newStore func(*testing.T) store.Store) {
	cases := []struct {
		name string
		edit func(p *store.JobClaimParams)
	}{
		{"no_worker", func(p *store.JobClaimParams) { p.WorkerID = "" }},
		{"no_queues", func(p *store.JobClaimParams) { p.Queues = nil }},
		{"limit_zero", func(p *store.JobClaimParams) { p.Limit = 0 }},
		{"limit_too_big", func(p *store.JobClaimParams) { p.Limit = store.MaxBatch + 1 }},
		{"no_ttl", func(p *store.JobClaimParams) { p.LeaseTTL = 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(lifecycle.Queued)
			before := h.snap(f.ID)
			p := store.JobClaimParams{WorkerID: "w", Queues: []string{f.Queue}, Limit: 1, LeaseTTL: leaseTTL, Now: h.tick()}
			c.edit(&p)
			jobs, err := h.s.JobClaim(h.ctx, &p)
			rejected(t, err, store.ErrValidation)
			if len(jobs) != 0 {
				t.Errorf("a refused claim returned %d jobs", len(jobs))
			}
			h.unchanged(before)
		})
	}
}
