package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
)

// tableActors lists the actors the table allows for op.
func tableActors(op lifecycle.Op) []lifecycle.Actor {
	var out []lifecycle.Actor
	for _, e := range lifecycle.Table {
		if e.Op == op {
			for _, a := range e.Actors {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// aimedOps lists the ops the table has a row for from s, so that most draws
// are commands that can be accepted and random lives go deep.
func aimedOps(s lifecycle.State) []lifecycle.Op {
	var out []lifecycle.Op
	for _, op := range allOps {
		for _, a := range allActors {
			if op != lifecycle.OpEnqueue && tableHas(op, a, s) && !slices.Contains(out, op) {
				out = append(out, op)
			}
		}
	}
	return out
}

// drawSpec draws a job: attempts, exhaustion policy, timeout, deadline,
// budget and how it starts (queued, scheduled, blocked, sometimes denied).
func drawSpec(t *rapid.T) lifecycle.Spec {
	s := baseSpec()
	s.MaxAttempts = rapid.IntRange(1, 3).Draw(t, "max_attempts")
	s.OnExhausted = rapid.SampledFrom([]lifecycle.State{lifecycle.DeadLettered, lifecycle.Failed}).Draw(t, "on_exhausted")
	if rapid.Bool().Draw(t, "has_timeout") {
		s.Timeout = time.Duration(rapid.IntRange(1, 120).Draw(t, "timeout_s")) * time.Second
	}
	if rapid.Bool().Draw(t, "has_deadline") {
		s.Deadline = ptr(t0.Add(time.Duration(rapid.IntRange(1, 900).Draw(t, "deadline_s")) * time.Second))
	}
	if rapid.Bool().Draw(t, "has_budget") {
		s.Budget = &lifecycle.Budget{
			MaxSteps:   int64(rapid.IntRange(0, 12).Draw(t, "max_steps")),
			MaxCost:    int64(rapid.IntRange(0, 12).Draw(t, "max_cost")),
			MaxRuntime: lifecycle.Duration(time.Duration(rapid.IntRange(0, 300).Draw(t, "max_runtime_s")) * time.Second),
		}
	}
	switch rapid.IntRange(0, 9).Draw(t, "start") {
	case 0, 1:
		s.RunAt = ptr(t0.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "run_at_s")) * time.Second))
	case 2, 3:
		s.DependsOn = []string{"job-0"}
	case 4:
		s.DenyReason = "over quota"
	}
	return s
}

// driver draws commands for one job and remembers the leases it issued, so
// that stale ones (superseded, released, revoked) are presented too.
type driver struct {
	issued []string
}

// lease draws the lease an owner op presents: mostly the live (or last) one.
func (d *driver) lease(t *rapid.T, j lifecycle.Job) string {
	switch rapid.IntRange(0, 9).Draw(t, "lease_pick") {
	case 0, 1, 2, 3, 4, 5:
		if j.LeaseID != "" {
			return j.LeaseID
		}
		return j.LastLeaseID
	case 6:
		return j.LastLeaseID
	case 7:
		if len(d.issued) > 0 {
			return rapid.SampledFrom(d.issued).Draw(t, "old_lease")
		}
	case 8:
		return "lease-forged"
	}
	return ""
}

// opWeight makes the ops that end a job from any state (cancels, dead_letter,
// halt, enqueue) rarer, so random lives get past claim and start.
var opWeight = map[lifecycle.Op]int{
	lifecycle.OpPromote: 6, lifecycle.OpUnblock: 6, lifecycle.OpClaim: 6, lifecycle.OpStart: 6,
	lifecycle.OpHeartbeat: 6, lifecycle.OpCheckpoint: 6, lifecycle.OpFail: 6, lifecycle.OpStall: 4,
	lifecycle.OpRequeue: 6, lifecycle.OpComplete: 2, lifecycle.OpTimeOut: 2, lifecycle.OpAckCancel: 3,
	lifecycle.OpForceCancel: 3,
}

// weighted repeats each op by its weight (1 unless opWeight says otherwise).
func weighted(ops []lifecycle.Op) []lifecycle.Op {
	var out []lifecycle.Op
	for _, op := range ops {
		for range max(opWeight[op], 1) {
			out = append(out, op)
		}
	}
	return out
}

var weightedOps = weighted(allOps)

// command draws one command for j: mostly an op the table has a row for from
// j's state, mostly by an actor the table allows, with random fields; a claim
// gets a fresh lease, other owner ops a live, stale or forged one.
func (d *driver) command(t *rapid.T, j lifecycle.Job, now time.Time) lifecycle.Command {
	op := rapid.SampledFrom(weightedOps).Draw(t, "op")
	if aimed := aimedOps(j.State); len(aimed) > 0 && rapid.IntRange(0, 3).Draw(t, "aim") > 0 {
		op = rapid.SampledFrom(weighted(aimed)).Draw(t, "aimed_op")
	}
	actor := rapid.SampledFrom(allActors).Draw(t, "any_actor")
	if allowed := tableActors(op); len(allowed) > 0 && rapid.IntRange(0, 4).Draw(t, "table_actor") > 0 {
		actor = rapid.SampledFrom(allowed).Draw(t, "actor")
	}
	c := lifecycle.Command{
		Op: op, Actor: actor, ActorID: worker,
		LeaseTTL:   time.Duration(rapid.SampledFrom([]int{0, 1, 30, 60, 60, 120}).Draw(t, "ttl_s")) * time.Second,
		ReasonCode: rapid.SampledFrom(append([]string{"bogus"}, lifecycle.DLQReasons...)).Draw(t, "reason_code"),
		Deadline:   rapid.Bool().Draw(t, "deadline"),
		UsageDelta: lifecycle.Usage{
			Steps: int64(rapid.IntRange(0, 5).Draw(t, "usage_steps")),
			Cost:  int64(rapid.IntRange(0, 5).Draw(t, "usage_cost")),
		},
		CancelGrace: time.Duration(rapid.SampledFrom([]int{0, 5, 30}).Draw(t, "grace_s")) * time.Second,
	}
	if op == lifecycle.OpClaim {
		c.LeaseID = fmt.Sprintf("lease-%d", len(d.issued)+1)
		d.issued = append(d.issued, c.LeaseID)
	} else if actor == lifecycle.ActorOwner {
		c.LeaseID = d.lease(t, j)
	}
	if rapid.Bool().Draw(t, "has_error") {
		c.Error = &lifecycle.JobError{
			Code:  rapid.SampledFrom([]string{"network", "compile_error", "timeout", "weird"}).Draw(t, "error_code"),
			Class: rapid.SampledFrom([]lifecycle.ErrorClass{"", lifecycle.ClassTransient, lifecycle.ClassPermanent, lifecycle.ClassTimeout}).Draw(t, "error_class"),
		}
	}
	switch rapid.IntRange(0, 2).Draw(t, "result") {
	case 0:
		c.Result = json.RawMessage(`{"ok":true}`)
	case 1:
		c.ResultPtr = "s3://results/1"
	}
	if rapid.Bool().Draw(t, "has_checkpoint") {
		c.Checkpoint = json.RawMessage(`{"cursor":1}`)
	}
	if rapid.IntRange(0, 4).Draw(t, "has_retry_at") == 0 {
		c.RetryAt = ptr(now.Add(time.Duration(rapid.IntRange(-10, 100).Draw(t, "retry_at_s")) * time.Second))
	}
	return c
}

// TestPropertyApply drives one job with random commands, leases and time
// jumps, and checks the lifecycle's laws after every step.
func TestPropertyApply(t *testing.T) {
	t.Parallel()
	jumps := []time.Duration{0, time.Millisecond, time.Second, 10 * time.Second, 31 * time.Second, 61 * time.Second, 10 * time.Minute}
	rapid.Check(t, func(t *rapid.T) {
		w := enqueue(t, drawSpec(t))
		d := &driver{}
		steps := rapid.IntRange(10, 150).Draw(t, "steps")
		for range steps {
			w.now = w.now.Add(rapid.SampledFrom(jumps).Draw(t, "jump"))
			cmd := d.command(t, w.job, w.now)
			prev := w.job
			before := deepCopy(prev)
			st, err := lifecycle.Apply(prev, cmd, w.now)
			if !reflect.DeepEqual(before, prev) {
				t.Fatalf("Apply(%s by %s) modified its input", cmd.Op, cmd.Actor)
			}
			switch {
			case err != nil:
				if !isRejection(err) {
					t.Fatalf("%s by %s on %s: error %v wraps no sentinel", cmd.Op, cmd.Actor, prev.State, err)
				}
				if !reflect.DeepEqual(st, lifecycle.Step{}) {
					t.Fatalf("%s by %s on %s: a rejection returned a step", cmd.Op, cmd.Actor, prev.State)
				}
			case st.Noop():
				if !reflect.DeepEqual(st.Job, prev) {
					t.Fatalf("%s by %s on %s: a no-op changed the job", cmd.Op, cmd.Actor, prev.State)
				}
			default:
				checkAccepted(t, prev, cmd, st, w.now)
				w.job = st.Job
				w.events = append(w.events, *st.Event)
			}
		}
		r, err := lifecycle.Replay(w.events)
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		if want := (lifecycle.Replayed{State: w.job.State, Attempt: w.job.Attempt, Rev: w.job.Rev}); r != want {
			t.Fatalf("Replay = %+v, job is %+v", r, want)
		}
		if err := lifecycle.Verify(w.job, w.events); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
}

// checkAccepted asserts the laws of one accepted step.
func checkAccepted(t *rapid.T, prev lifecycle.Job, cmd lifecycle.Command, st lifecycle.Step, now time.Time) {
	t.Helper()
	next, ev := st.Job, st.Event
	what := fmt.Sprintf("%s by %s: %s -> %s", cmd.Op, cmd.Actor, prev.State, next.State)
	if prev.State.Terminal() {
		t.Fatalf("%s: a terminal job changed (LI-1)", what)
	}
	if err := lifecycle.Check(next); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if next.Rev != prev.Rev+1 || ev.Rev != next.Rev {
		t.Fatalf("%s: rev %d -> %d (event %d), want +1", what, prev.Rev, next.Rev, ev.Rev)
	}
	want := prev.Attempt
	if ev.Type == lifecycle.EventClaimed {
		want++
	}
	if next.Attempt != want || ev.Attempt != want || (ev.Type == lifecycle.EventClaimed) != (cmd.Op == lifecycle.OpClaim) {
		t.Fatalf("%s: attempt %d -> %d (event %s), want %d (LI-2)", what, prev.Attempt, next.Attempt, ev.Type, want)
	}
	wantFailures := prev.Failures
	if lifecycle.FailedAttempt(ev.Op, ev.Actor, prev.State) {
		wantFailures++
	}
	if next.Failures != wantFailures || next.Failures > next.MaxAttempts {
		t.Fatalf("%s: failures %d -> %d, want %d (at most max_attempts %d)", what, prev.Failures, next.Failures, wantFailures, next.MaxAttempts)
	}
	if next.Usage.RuntimeMS < prev.Usage.RuntimeMS || (next.Usage.RuntimeMS != prev.Usage.RuntimeMS && (!prev.State.Leased() || next.State.Leased())) {
		t.Fatalf("%s: runtime_ms %d -> %d; it grows only when an attempt ends", what, prev.Usage.RuntimeMS, next.Usage.RuntimeMS)
	}
	if ev.FromState != prev.State || ev.ToState != next.State || !lifecycle.Allowed(ev.Op, ev.Actor, ev.FromState, ev.ToState) {
		t.Fatalf("%s: event %s %s by %s %s -> %s is not a row of the table", what, ev.Type, ev.Op, ev.Actor, ev.FromState, ev.ToState)
	}
	if !ev.At.Equal(now) {
		t.Fatalf("%s: event at %s, want %s", what, ev.At, now)
	}
	if cmd.Actor == lifecycle.ActorOwner && cmd.Op != lifecycle.OpClaim {
		if !prev.State.Leased() || cmd.LeaseID != prev.LeaseID || !now.Before(*prev.LeaseExpiresAt) {
			t.Fatalf("%s: accepted lease %q, but the job's lease is %q until %v", what, cmd.LeaseID, prev.LeaseID, prev.LeaseExpiresAt)
		}
	}
}

// TestPropertyTerminalIsFinal: whatever is sent to a terminal job, it stays
// exactly as it is.
func TestPropertyTerminalIsFinal(t *testing.T) {
	t.Parallel()
	terminal := slices.DeleteFunc(slices.Clone(lifecycle.States), func(s lifecycle.State) bool { return !s.Terminal() })
	rapid.Check(t, func(t *rapid.T) {
		w := reach(t, baseSpec(), rapid.SampledFrom(terminal).Draw(t, "state"))
		d := &driver{issued: []string{"lease-1"}}
		for range rapid.IntRange(1, 20).Draw(t, "steps") {
			w.now = w.now.Add(time.Duration(rapid.IntRange(0, 3600).Draw(t, "jump_s")) * time.Second)
			cmd := d.command(t, w.job, w.now)
			st, err := lifecycle.Apply(w.job, cmd, w.now)
			if err == nil && (!st.Noop() || !reflect.DeepEqual(st.Job, w.job)) {
				t.Fatalf("%s by %s changed a %s job", cmd.Op, cmd.Actor, w.job.State)
			}
		}
	})
}
