package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testTransitions takes every row of lifecycle.Table through the store. The
// subtests are generated from the table: a row (op, actor, from → to) with
// no recipe fails, so a row added to the table cannot go untested.
func testTransitions(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, e := range lifecycle.Table {
		for _, a := range e.Actors {
			t.Run(rowName(e, a), func(t *testing.T) {
				t.Parallel()
				if e.From == "" {
					testEnqueueRow(t, newStore, e)
					return
				}
				rs := recipes(e, a)
				if len(rs) == 0 {
					t.Fatalf("no recipe reaches the row %s by %s %s → %s: add one to recipes in store/storetest/transitions.go", e.Op, a, e.From, e.To)
				}
				for _, r := range rs {
					if r.call != nil {
						t.Run(r.name+"/method", func(t *testing.T) { t.Parallel(); r.run(t, newStore, e, a, false) })
					}
					if r.cmd != nil {
						t.Run(r.name+"/apply", func(t *testing.T) { t.Parallel(); r.run(t, newStore, e, a, true) })
					}
				}
			})
		}
	}
}

func rowName(e lifecycle.Edge, a lifecycle.Actor) string {
	from := string(e.From)
	if from == "" {
		from = "none"
	}
	return fmt.Sprintf("%s/%s/%s->%s", e.Op, a, from, e.To)
}

// recipe reaches one row of the table: a job built in the row's from state
// (with opts), the clock moved by wait, then the op performed through a
// dedicated Store method (call) and, on a twin job, through JobApply (cmd).
type recipe struct {
	name string
	opts []specOpt
	wait time.Duration
	cmd  func(f fixture) lifecycle.Command
	call func(h *harness, f fixture, at *time.Time) (store.Job, error)
	// from builds the job instead of h.build(row's from state, opts...).
	from func(h *harness, opts ...specOpt) fixture
}

// recipes returns the ways the suite takes the row e by actor a.
func recipes(e lifecycle.Edge, a lifecycle.Actor) []recipe {
	const twoHours = 2 * time.Hour // past every fixture's lease, run_at and deadline
	switch e.Op {
	case lifecycle.OpPromote:
		return []recipe{{name: "due", wait: twoHours, cmd: sys(lifecycle.OpPromote), call: maintain(store.Store.JobPromoteDue)}}
	case lifecycle.OpUnblock:
		return []recipe{{name: "deps_done", cmd: sys(lifecycle.OpUnblock)}}
	case lifecycle.OpClaim:
		return []recipe{{name: "claim",
			cmd: func(fixture) lifecycle.Command {
				return lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: "worker-b", LeaseID: "lease-by-apply", LeaseTTL: leaseTTL}
			},
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "worker-b", Queues: []string{f.Queue}, Limit: 5, LeaseTTL: leaseTTL, Now: at})
				if err != nil || len(jobs) != 1 {
					return store.Job{}, fmt.Errorf("claim returned %d jobs, err %v; want the one queued job", len(jobs), err)
				}
				return jobs[0], nil
			}}}
	case lifecycle.OpStart:
		return []recipe{{name: "start", cmd: own(lifecycle.OpStart),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobStart(h.ctx, &store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: at})
			}}}
	case lifecycle.OpHeartbeat:
		return []recipe{{name: "heartbeat",
			cmd: with(own(lifecycle.OpHeartbeat), func(c *lifecycle.Command) { c.LeaseTTL = leaseTTL; c.Phase = "uploading" }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, at), LeaseTTL: leaseTTL, Phase: "uploading"})
			}}}
	case lifecycle.OpCheckpoint:
		return []recipe{{name: "checkpoint",
			cmd: with(own(lifecycle.OpCheckpoint), func(c *lifecycle.Command) { c.Checkpoint = json.RawMessage(`{"page":2}`) }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: ownerAt(f, at), Checkpoint: json.RawMessage(`{"page":2}`), Steps: 1})
			}}}
	case lifecycle.OpComplete:
		return []recipe{{name: "complete",
			cmd: with(own(lifecycle.OpComplete), func(c *lifecycle.Command) { c.Result = json.RawMessage(`{"answer":42}`) }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt(f, at), Result: json.RawMessage(`{"answer":42}`)}})
				if err != nil {
					return store.Job{}, err
				}
				return res[0].Job, res[0].Err
			}}}
	case lifecycle.OpFail:
		return failRecipes(e.To)
	case lifecycle.OpHalt:
		if a == lifecycle.ActorOwner {
			return []recipe{{name: "handler_halts",
				cmd: with(own(lifecycle.OpHalt), func(c *lifecycle.Command) { c.ReasonCode = "step_limit" }),
				call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
					return h.s.JobHalt(h.ctx, &store.JobHaltParams{OwnerParams: ownerAt(f, at), ReasonCode: "step_limit", Reason: "done enough"})
				}}}
		}
		return []recipe{
			{name: "policy", cmd: sys(lifecycle.OpHalt)},
			{name: "checkpoint_over_budget", opts: []specOpt{stepBudget(1)},
				cmd: with(own(lifecycle.OpCheckpoint), func(c *lifecycle.Command) { c.UsageDelta.Steps = 2 }),
				call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
					return h.s.JobCheckpoint(h.ctx, &store.JobCheckpointParams{OwnerParams: ownerAt(f, at), Steps: 2})
				}},
		}
	case lifecycle.OpStall:
		if a == lifecycle.ActorOwner {
			return []recipe{{name: "release", cmd: own(lifecycle.OpStall),
				call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
					return h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: ownerAt(f, at), Reason: "draining"})
				}}}
		}
		return []recipe{{name: "lease_expired", wait: twoHours, cmd: sys(lifecycle.OpStall), call: maintain(store.Store.JobStallExpired)}}
	case lifecycle.OpRequeue:
		r := recipe{name: "attempts_left", cmd: sys(lifecycle.OpRequeue), call: maintain(store.Store.JobRequeueStalled)}
		if e.To == lifecycle.DeadLettered {
			// Only a lost lease uses up the last attempt: a release does not.
			r.name, r.opts, r.from = "no_attempts_left", []specOpt{maxAttempts(1)}, (*harness).expired
		}
		return []recipe{r}
	case lifecycle.OpDeadLetter:
		if a == lifecycle.ActorSystem {
			return []recipe{{name: "system",
				cmd: with(sys(lifecycle.OpDeadLetter), func(c *lifecycle.Command) { c.ReasonCode = lifecycle.ReasonPolicyViolation }),
				call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
					return h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: f.ID, Now: at}, ReasonCode: lifecycle.ReasonPolicyViolation})
				}}}
		}
		return []recipe{{name: "owner",
			cmd: with(own(lifecycle.OpDeadLetter), func(c *lifecycle.Command) { c.ReasonCode = lifecycle.ReasonParseError }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: ownerAt(f, at), ReasonCode: lifecycle.ReasonParseError,
					Error: &lifecycle.JobError{Code: "parse_error", Message: "payload is not a PNG"}})
			}}}
	case lifecycle.OpCancel, lifecycle.OpCancelHard:
		hard := e.Op == lifecycle.OpCancelHard
		return []recipe{{name: "client",
			cmd: func(fixture) lifecycle.Command {
				return lifecycle.Command{Op: e.Op, Actor: lifecycle.ActorClient, ActorID: "operator", Reason: "not needed"}
			},
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, ActorID: "operator", Reason: "not needed", Now: at})
			}}}
	case lifecycle.OpAckCancel:
		return []recipe{{name: "ack", cmd: own(lifecycle.OpAckCancel),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobAckCancel(h.ctx, &store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: at})
			}}}
	case lifecycle.OpForceCancel:
		return []recipe{
			{name: "cancel_deadline", wait: lifecycle.DefaultCancelGrace + time.Minute, cmd: sys(lifecycle.OpForceCancel), call: maintain(store.Store.JobForceCancelDue)},
			{name: "lease_expired", wait: twoHours, cmd: sys(lifecycle.OpForceCancel), call: maintain(store.Store.JobStallExpired)},
		}
	case lifecycle.OpStep, lifecycle.OpSuspend, lifecycle.OpWake:
		return stepRecipes(e, a)
	case lifecycle.OpTimeOut:
		deadline := with(sys(lifecycle.OpTimeOut), func(c *lifecycle.Command) { c.Deadline = true })
		if e.To == lifecycle.Retrying {
			return []recipe{{name: "attempt_timeout", opts: []specOpt{timeoutOf(time.Minute)}, wait: 2 * time.Minute,
				cmd: sys(lifecycle.OpTimeOut), call: maintain(store.Store.JobTimeOutDue)}}
		}
		rs := []recipe{{name: "deadline", opts: []specOpt{deadlineIn(time.Hour)}, wait: twoHours, cmd: deadline, call: maintain(store.Store.JobTimeOutDue)}}
		if e.From == lifecycle.Running {
			rs = append(rs, recipe{name: "attempt_timeout_no_attempts_left", opts: []specOpt{timeoutOf(time.Minute), maxAttempts(1)},
				wait: 2 * time.Minute, cmd: sys(lifecycle.OpTimeOut), call: maintain(store.Store.JobTimeOutDue)})
		}
		return rs
	}
	return nil
}

// failRecipes reach each outcome of an owner's fail.
func failRecipes(to lifecycle.State) []recipe {
	r := func(name string, e lifecycle.JobError, opts ...specOpt) recipe {
		return recipe{name: name, opts: opts,
			cmd: with(own(lifecycle.OpFail), func(c *lifecycle.Command) { c.Error = &e }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: ownerAt(f, at), Error: e})
			}}
	}
	transient := lifecycle.JobError{Code: "network", Message: "connection reset"}
	switch to {
	case lifecycle.Retrying:
		return []recipe{r("transient", transient)}
	case lifecycle.Failed:
		return []recipe{
			r("permanent_by_rule", lifecycle.JobError{Code: "compile_error", Message: "syntax error"}),
			r("permanent_by_class", lifecycle.JobError{Code: "bad_input", Message: "no", Class: lifecycle.ClassPermanent}),
			r("exhausted_failed_policy", transient, maxAttempts(1), onExhaustedFailed()),
		}
	case lifecycle.DeadLettered:
		return []recipe{r("exhausted", transient, maxAttempts(1))}
	case lifecycle.TimedOut:
		return []recipe{r("timeout_exhausted", lifecycle.JobError{Code: "timeout", Message: "too slow"}, maxAttempts(1))}
	}
	return nil
}

func sys(op lifecycle.Op) func(fixture) lifecycle.Command {
	return func(fixture) lifecycle.Command {
		return lifecycle.Command{Op: op, Actor: lifecycle.ActorSystem, ActorID: "storetest"}
	}
}

func own(op lifecycle.Op) func(fixture) lifecycle.Command {
	return func(f fixture) lifecycle.Command {
		return lifecycle.Command{Op: op, Actor: lifecycle.ActorOwner, ActorID: f.Worker, LeaseID: f.Lease}
	}
}

func with(base func(fixture) lifecycle.Command, edit func(*lifecycle.Command)) func(fixture) lifecycle.Command {
	return func(f fixture) lifecycle.Command {
		c := base(f)
		edit(&c)
		return c
	}
}

func ownerAt(f fixture, at *time.Time) store.OwnerParams {
	return store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: at}
}

// maintain wraps a maintenance pass as a recipe call that must change
// exactly the one job in the store.
func maintain(pass func(store.Store, context.Context, *store.MaintainParams) (int, error)) func(*harness, fixture, *time.Time) (store.Job, error) {
	return func(h *harness, f fixture, at *time.Time) (store.Job, error) {
		n, err := pass(h.s, h.ctx, &store.MaintainParams{ActorID: "maintenance", Now: at})
		if err == nil && n != 1 {
			err = fmt.Errorf("the pass changed %d jobs, want 1", n)
		}
		return store.Job{}, err
	}
}

// run builds the row's job, performs the op, and checks the result.
func (r recipe) run(t *testing.T, newStore func(*testing.T) store.Store, e lifecycle.Edge, a lifecycle.Actor, apply bool) {
	h := newHarness(t, newStore)
	var f fixture
	if r.from != nil {
		f = r.from(h, r.opts...)
	} else {
		f = h.build(e.From, r.opts...)
	}
	h.advance(r.wait)
	before := h.snap(f.ID)
	at := h.tick()
	var got store.Job
	var err error
	if apply {
		got, err = h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: r.cmd(f), Now: at})
	} else {
		got, err = r.call(h, f, at)
	}
	if err != nil {
		t.Fatalf("%s by %s from %s: %v", e.Op, a, e.From, err)
	}
	after := h.snap(f.ID)
	if got.ID != "" && !sameJob(got, after.Job) {
		t.Errorf("the call returned %s\nbut the store holds %s", asJSON(got), asJSON(after.Job))
	}
	checkEdge(t, before, after, e, a, *at)
}

// checkEdge checks that exactly the row e by a happened between before and
// after, at time at.
func checkEdge(t *testing.T, before, after snapshot, e lifecycle.Edge, a lifecycle.Actor, at time.Time) {
	t.Helper()
	j := after.Job
	if j.State != e.To {
		t.Fatalf("state %s, want %s", j.State, e.To)
	}
	if j.Rev != before.Job.Rev+1 {
		t.Errorf("rev %d → %d, want +1", before.Job.Rev, j.Rev)
	}
	if len(after.Events) != len(before.Events)+1 {
		t.Fatalf("%d events → %d, want exactly one more", len(before.Events), len(after.Events))
	}
	for i := range before.Events {
		if asJSON(after.Events[i]) != asJSON(before.Events[i]) {
			t.Errorf("event %d changed: the log is append-only\nbefore %s\nafter  %s", i+1, asJSON(before.Events[i]), asJSON(after.Events[i]))
		}
	}
	wantAttempt := before.Job.Attempt
	if e.Op == lifecycle.OpClaim {
		wantAttempt++
	}
	if j.Attempt != wantAttempt {
		t.Errorf("attempt %d → %d, want %d (LI-2: only a claim adds one)", before.Job.Attempt, j.Attempt, wantAttempt)
	}
	ev := after.Events[len(after.Events)-1]
	want := fmt.Sprintf("type=%s from=%s to=%s actor=%s rev=%d attempt=%d job=%s", e.Event, e.From, e.To, a, j.Rev, wantAttempt, j.ID)
	got := fmt.Sprintf("type=%s from=%s to=%s actor=%s rev=%d attempt=%d job=%s", ev.Type, ev.FromState, ev.ToState, ev.Actor, ev.Rev, ev.Attempt, ev.JobID)
	if got != want {
		t.Errorf("event %s\nwant  %s", got, want)
	}
	if !ev.At.Equal(at) {
		t.Errorf("event at %s, want the Now passed, %s", ev.At, at)
	}
	if e.Op == lifecycle.OpClaim {
		if j.LeaseID == "" || j.LeaseID == before.Job.LastLeaseID || ev.LeaseID != j.LeaseID {
			t.Errorf("claim: lease %q (event %q, previous %q): want a fresh fencing token on the job and its event", j.LeaseID, ev.LeaseID, before.Job.LastLeaseID)
		}
		if j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.Equal(at.Add(leaseTTL)) {
			t.Errorf("claim: lease expires at %v, want now + TTL = %s", j.LeaseExpiresAt, at.Add(leaseTTL))
		}
	}
	if e.From.Leased() && e.To.Leased() && j.LeaseID != before.Job.LeaseID {
		t.Errorf("%s changed the lease %s → %s; only a claim grants a new one", e.Op, before.Job.LeaseID, j.LeaseID)
	}
	if e.From.Leased() && !e.To.Leased() && (j.LastLeaseID != before.Job.LeaseID || j.LastOwner != before.Job.Owner) {
		t.Errorf("leaving a lease: last_lease_id %q last_owner %q, want %q %q", j.LastLeaseID, j.LastOwner, before.Job.LeaseID, before.Job.Owner)
	}
	checkJob(t, after)
}

// testEnqueueRow takes one ∅ → state row through JobEnqueue (∅ → blocked
// through RunCreate: only a run's job waits for others).
func testEnqueueRow(t *testing.T, newStore func(*testing.T) store.Store, e lifecycle.Edge) {
	var opts []specOpt
	switch e.To {
	case lifecycle.Queued:
		opts = []specOpt{runAtIn(-time.Minute)} // a run_at in the past is due now
	case lifecycle.Scheduled:
		opts = []specOpt{runAtIn(time.Hour)}
	}
	h := newHarness(t, newStore)
	switch e.To {
	case lifecycle.Queued, lifecycle.Scheduled:
	case lifecycle.Blocked: // only a run's job waits for others: see harness.blocked
	case lifecycle.Denied:
		opts = []specOpt{denied("tenant over quota")}
	default:
		t.Fatalf("no recipe enqueues straight into %s: add one to testEnqueueRow", e.To)
	}
	at := h.tick()
	spec := h.spec(*at, opts...)
	var res []store.EnqueueResult
	if e.To == lifecycle.Blocked {
		f := h.blockedAt(spec, at)
		res = []store.EnqueueResult{{Job: h.get(f.ID)}}
	} else {
		var err error
		res, err = h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: "producer", Now: at})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
	}
	if len(res) != 1 || res[0].Existing {
		t.Fatalf("enqueue returned %+v, want one new job", res)
	}
	after := h.snap(res[0].Job.ID)
	if !sameJob(res[0].Job, after.Job) {
		t.Errorf("enqueue returned %s\nbut the store holds %s", asJSON(res[0].Job), asJSON(after.Job))
	}
	j := after.Job
	if j.State != e.To || j.Rev != 1 || j.Attempt != 0 || !j.CreatedAt.Equal(*at) {
		t.Errorf("new job: state %s rev %d attempt %d created_at %s; want %s, 1, 0, %s", j.State, j.Rev, j.Attempt, j.CreatedAt, e.To, *at)
	}
	if j.Kind != spec.Kind || j.Queue != spec.Queue || j.MaxAttempts != lifecycle.DefaultMaxAttempts {
		t.Errorf("new job %s does not carry its spec %s with defaults", asJSON(j), asJSON(spec))
	}
	if len(after.Events) != 1 {
		t.Fatalf("%d events, want 1", len(after.Events))
	}
	checkEdge(t, snapshot{Job: store.Job{ID: j.ID}}, after, e, lifecycle.ActorClient, *at)
}
