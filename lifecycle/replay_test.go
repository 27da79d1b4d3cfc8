package lifecycle_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// history is a legal life with two attempts, heartbeats, a checkpoint, a
// retry and a soft cancel that the owner outran: 12 events, ending succeeded.
func history(t *testing.T) *world {
	t.Helper()
	w := reach(t, baseSpec(), lifecycle.Running) // enqueued, claimed, started
	w.must(t, ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID))
	cp := ownerCmd(lifecycle.OpCheckpoint, w.job.LeaseID)
	cp.Checkpoint = json.RawMessage(`{"cursor":3}`)
	w.must(t, cp)
	w.must(t, failCmd(w.job.LeaseID, "network", lifecycle.ClassTransient))
	w.mustAt(t, w.job.RunAt, systemCmd(lifecycle.OpPromote))
	w.claim(t)
	w.must(t, ownerCmd(lifecycle.OpStart, w.job.LeaseID))
	w.must(t, clientCmd(lifecycle.OpCancel))
	w.must(t, ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID))
	w.must(t, completeCmd(w.job.LeaseID))
	if len(w.events) != 12 || w.job.State != lifecycle.Succeeded {
		t.Fatalf("history has %d events and ends %s", len(w.events), w.job.State)
	}
	return w
}

func TestReplayLegalHistories(t *testing.T) {
	t.Parallel()
	t.Run("two attempts to success", func(t *testing.T) {
		t.Parallel()
		w := history(t)
		r, err := lifecycle.Replay(w.events)
		want := lifecycle.Replayed{State: lifecycle.Succeeded, Attempt: 2, Rev: 12}
		if err != nil || r != want {
			t.Fatalf("Replay = %+v, %v; want %+v", r, err, want)
		}
		if err := lifecycle.Verify(w.job, w.events); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
	for _, s := range lifecycle.States {
		t.Run("to "+string(s), func(t *testing.T) {
			t.Parallel()
			w := reach(t, baseSpec(), s)
			r, err := lifecycle.Replay(w.events)
			want := lifecycle.Replayed{State: w.job.State, Attempt: w.job.Attempt, Rev: w.job.Rev}
			if err != nil || r != want {
				t.Fatalf("Replay = %+v, %v; want %+v", r, err, want)
			}
			if err := lifecycle.Verify(w.job, w.events); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
	t.Run("pruned heartbeats leave a tolerated gap", func(t *testing.T) {
		t.Parallel()
		w := history(t)
		evs := slices.Delete(slices.Clone(w.events), 3, 4) // the first heartbeat
		if evs[2].Type != lifecycle.EventStarted || evs[3].Type != lifecycle.EventCheckpointed {
			t.Fatalf("fixture moved: %s, %s", evs[2].Type, evs[3].Type)
		}
		if err := lifecycle.Verify(w.job, evs); err != nil {
			t.Fatalf("Verify without a heartbeat: %v", err)
		}
	})
}

// TestReplayTampered: every way of corrupting a legal log is reported, at the
// event that is wrong.
func TestReplayTampered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(evs []lifecycle.Event) []lifecycle.Event
		inMsg  string
	}{
		{"skipped rev while queued", func(evs []lifecycle.Event) []lifecycle.Event {
			for i := 1; i < len(evs); i++ {
				evs[i].Rev++
			}
			return evs
		}, "rev must be 2"},
		{"repeated rev", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[4].Rev = evs[3].Rev
			return evs
		}, "rev must be 5"},
		{"wrong from_state", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[4].FromState = lifecycle.Claimed
			return evs
		}, "starts from claimed but the job was running"},
		{"first event not from ∅", func(evs []lifecycle.Event) []lifecycle.Event { return evs[1:] }, "starts from queued but the job was ∅"},
		{"duplicated event", func(evs []lifecycle.Event) []lifecycle.Event { return slices.Insert(evs, 3, evs[2]) }, "starts from claimed"},
		{"lost state change", func(evs []lifecycle.Event) []lifecycle.Event { return slices.Delete(evs, 5, 6) }, "starts from retrying but the job was running"},
		{"event after terminal", func(evs []lifecycle.Event) []lifecycle.Event {
			last := evs[len(evs)-1]
			extra := last
			extra.Type, extra.Op, extra.Actor = lifecycle.EventCancelled, lifecycle.OpCancelHard, lifecycle.ActorClient
			extra.FromState, extra.ToState, extra.Rev = lifecycle.Succeeded, lifecycle.Cancelled, last.Rev+1
			return append(evs, extra)
		}, "LI-1"},
		{"attempt bump on a heartbeat", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[3].Attempt++
			return evs
		}, "only a claim adds one"},
		{"claim without attempt bump", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[1].Attempt = 0
			return evs
		}, "attempt must be 1"},
		{"unknown edge", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[2].ToState = lifecycle.Succeeded // start: claimed → succeeded
			return evs
		}, "no row of the transition table"},
		{"event type of another row", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[2].Type = lifecycle.EventSucceeded // claimed → running recorded as succeeded
			return evs
		}, "no row of the transition table"},
		{"actor the row does not allow", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[3].Actor = lifecycle.ActorClient // a heartbeat by a client
			return evs
		}, "no row of the transition table"},
		{"op the row does not have", func(evs []lifecycle.Event) []lifecycle.Event {
			evs[11].Op = lifecycle.OpAckCancel // cancel_requested → succeeded recorded as an ack_cancel
			return evs
		}, "no row of the transition table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := history(t)
			evs := tc.tamper(deepCopy(w.events))
			if _, err := lifecycle.Replay(evs); err == nil || !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("Replay error = %v, want one saying %q", err, tc.inMsg)
			}
			if err := lifecycle.Verify(w.job, evs); err == nil {
				t.Errorf("Verify accepted the tampered log")
			}
		})
	}
}

// TestVerifyRowMismatch: a clean log that does not lead to the row, or a row
// that breaks an invariant, fails Verify.
func TestVerifyRowMismatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(j *lifecycle.Job)
		inMsg  string
	}{
		{"state", func(j *lifecycle.Job) { j.State = lifecycle.Failed }, "row says state failed"},
		{"attempt", func(j *lifecycle.Job) { j.Attempt = 1 }, "attempt 1"},
		{"rev", func(j *lifecycle.Job) { j.Rev = 13 }, "rev 13"},
		{"invariant", func(j *lifecycle.Job) { j.Error = &lifecycle.JobError{Code: "x", Message: "y"} }, "error absent"},
		{"spec", func(j *lifecycle.Job) { j.Queue = "elsewhere" }, "spec (tenant, kind, queue"},
		{"payload", func(j *lifecycle.Job) { j.Payload = json.RawMessage(`{"to":"eve@example.com"}`) }, "spec digests to"},
		{"failures", func(j *lifecycle.Job) { j.Failures = 2 }, "failures: row says 2, events say 1"},
		{"created_at", func(j *lifecycle.Job) { j.CreatedAt = j.CreatedAt.Add(-time.Hour) }, "created_at: row says"},
		{"run_at", func(j *lifecycle.Job) { j.RunAt = j.RunAt.Add(time.Hour) }, "run_at: row says"},
		{"finished_at", func(j *lifecycle.Job) { j.FinishedAt = ptr(j.FinishedAt.Add(time.Hour)) }, "finished_at: row says"},
		{"result_digest", func(j *lifecycle.Job) { j.ResultDigest = "sha256:00" }, "result_digest: row says"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := history(t)
			tc.mutate(&w.job)
			if err := lifecycle.Verify(w.job, w.events); err == nil || !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("Verify error = %v, want one saying %q", err, tc.inMsg)
			}
		})
	}
	t.Run("no events", func(t *testing.T) {
		t.Parallel()
		if err := lifecycle.Verify(history(t).job, nil); err == nil {
			t.Error("Verify accepted a job without events")
		}
	})
}

// TestVerifyLeasedColumns: in a job that holds a lease, each column the
// maintenance queries and fencing read is checked against the events.
func TestVerifyLeasedColumns(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Timeout = 5 * time.Minute
	cases := []struct {
		state  lifecycle.State
		mutate func(j *lifecycle.Job)
		inMsg  string
	}{
		{lifecycle.Running, func(j *lifecycle.Job) { j.Owner += "-x" }, "owner: row says"},
		{lifecycle.Running, func(j *lifecycle.Job) { j.LeaseID += "-x" }, "lease_id: row says"},
		{lifecycle.Running, func(j *lifecycle.Job) { j.LeaseExpiresAt = ptr(j.LeaseExpiresAt.Add(time.Hour)) }, "lease_expires_at: row says"},
		{lifecycle.Claimed, func(j *lifecycle.Job) { j.LeaseExpiresAt = ptr(j.LeaseExpiresAt.Add(time.Hour)) }, "lease_expires_at: row says"},
		{lifecycle.Running, func(j *lifecycle.Job) { j.TimeoutAt = ptr(j.TimeoutAt.Add(time.Hour)) }, "timeout_at: row says"},
		{lifecycle.CancelRequested, func(j *lifecycle.Job) { j.CancelDeadline = ptr(j.CancelDeadline.Add(time.Hour)) }, "cancel_deadline: row says"},
		{lifecycle.Retrying, func(j *lifecycle.Job) { j.RunAt = j.RunAt.Add(time.Hour) }, "run_at: row says"},
		{lifecycle.Scheduled, func(j *lifecycle.Job) { j.RunAt = j.RunAt.Add(time.Hour) }, "run_at: row says"},
	}
	for _, tc := range cases {
		t.Run(tc.inMsg+" "+string(tc.state), func(t *testing.T) {
			t.Parallel()
			w := reach(t, spec, tc.state)
			if err := lifecycle.Verify(w.job, w.events); err != nil {
				t.Fatalf("Verify before the change: %v", err)
			}
			tc.mutate(&w.job)
			if err := lifecycle.Verify(w.job, w.events); err == nil || !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("Verify error = %v, want one saying %q", err, tc.inMsg)
			}
		})
	}
}

// TestVerifyAcrossPrunedHeartbeats: retention may delete heartbeats,
// including the last events of a running job; Verify stays clean, and
// still catches a rev or lease expiry the pruning cannot explain.
func TestVerifyAcrossPrunedHeartbeats(t *testing.T) {
	t.Parallel()
	w := reach(t, baseSpec(), lifecycle.Running)
	kept := len(w.events)
	for range 3 {
		w.must(t, ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID))
	}
	pruned := w.events[:kept] // every heartbeat gone, the last ones included
	if err := lifecycle.Verify(w.job, pruned); err != nil {
		t.Fatalf("Verify after pruning the trailing heartbeats: %v", err)
	}
	stale := w.job
	stale.UpdatedAt = pruned[len(pruned)-1].At // no write after the last event: the gap is not heartbeats
	if err := lifecycle.Verify(stale, pruned); err == nil || !strings.Contains(err.Error(), "rev") {
		t.Errorf("a rev ahead of the log with no later write: %v, want a rev finding", err)
	}
	early := w.job
	early.LeaseExpiresAt = ptr(pruned[len(pruned)-1].At)
	if err := lifecycle.Verify(early, pruned); err == nil || !strings.Contains(err.Error(), "lease_expires_at") {
		t.Errorf("a lease expiry no pruned heartbeat can have set: %v, want a lease_expires_at finding", err)
	}
	w.must(t, completeCmd(w.job.LeaseID))
	if err := lifecycle.Verify(w.job, append(pruned, w.events[len(w.events)-1])); err != nil {
		t.Errorf("Verify with the heartbeats pruned mid-log: %v", err)
	}
}

// TestVerifyCancelGraceOverride: a soft cancel with its own grace records
// its deadline on the event, so Verify checks cancel_deadline against it.
func TestVerifyCancelGraceOverride(t *testing.T) {
	t.Parallel()
	w := reach(t, baseSpec(), lifecycle.Running)
	c := clientCmd(lifecycle.OpCancel)
	c.CancelGrace = 5 * time.Second
	ev := w.must(t, c)
	if want := ev.At.Add(5 * time.Second); !w.job.CancelDeadline.Equal(want) || len(ev.Details) == 0 {
		t.Fatalf("cancel_deadline %s (details %s), want %s recorded on the event", w.job.CancelDeadline, ev.Details, want)
	}
	if err := lifecycle.Verify(w.job, w.events); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	w.job.CancelDeadline = ptr(ev.At.Add(lifecycle.DefaultCancelGrace))
	if err := lifecycle.Verify(w.job, w.events); err == nil || !strings.Contains(err.Error(), "cancel_deadline") {
		t.Errorf("cancel_deadline at the job's grace instead of the cancel's: %v", err)
	}
}
