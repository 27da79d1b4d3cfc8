package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// terminalStates lists the states no job ever leaves.
func terminalStates() []lifecycle.State {
	var out []lifecycle.State
	for _, s := range lifecycle.States {
		if s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// maintenancePasses are the store's maintenance operations.
var maintenancePasses = map[string]func(store.Store, context.Context, *store.MaintainParams) (int, error){
	"promote":      store.Store.JobPromoteDue,
	"stall":        store.Store.JobStallExpired,
	"requeue":      store.Store.JobRequeueStalled,
	"force_cancel": store.Store.JobForceCancelDue,
	"time_out":     store.Store.JobTimeOutDue,
}

// testInvariants checks LI-1 to LI-5 of seed-workers through the store.
func testInvariants(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, s := range terminalStates() {
		t.Run("LI-1_terminal_never_changes/"+string(s), func(t *testing.T) {
			t.Parallel()
			testTerminalFrozen(t, newStore, s)
		})
	}
	t.Run("LI-2_attempt_rises_by_one_per_claim", func(t *testing.T) { t.Parallel(); testAttemptRule(t, newStore) })
	t.Run("LI-3_timestamps_in_order", func(t *testing.T) { t.Parallel(); testTimestamps(t, newStore) })
	t.Run("LI-4_provenance", func(t *testing.T) { t.Parallel(); testProvenance(t, newStore) })
	t.Run("LI-4_provenance_digest_matches_the_stored_result", func(t *testing.T) { t.Parallel(); testDigest(t, newStore) })
	t.Run("LI-5_one_live_job_per_key", func(t *testing.T) { t.Parallel(); testOneLivePerKey(t, newStore) })
}

// testTerminalFrozen (LI-1): every op of the table, by every actor, with the
// job's own last lease and with another, every Store method, and every
// maintenance pass far in the future leave a terminal job exactly as it was.
func testTerminalFrozen(t *testing.T, newStore func(*testing.T) store.Store, state lifecycle.State) {
	h := newHarness(t, newStore)
	var opts []specOpt
	if state != lifecycle.TimedOut { // its fixture sets a deadline of its own
		opts = []specOpt{deadlineIn(time.Hour), timeoutOf(time.Minute)}
	}
	f := h.build(state, opts...)
	before := h.snap(f.ID)
	for _, lease := range []string{f.Lease, "lease-of-another-worker"} {
		if lease == "" {
			continue
		}
		f.Lease = lease
		for _, p := range tablePairs() {
			cmd := as(p.Op, p.Actor)(f)
			cmd.Deadline = p.Op == lifecycle.OpTimeOut
			got, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: cmd, Now: h.tick()})
			if err == nil && !sameJob(got, before.Job) {
				t.Errorf("%s by %s on a %s job returned a changed record %s", p.Op, p.Actor, state, asJSON(got))
			}
		}
		for _, call := range ownerCalls {
			_ = call(h, f, h.tick())
		}
		for _, hard := range []bool{false, true} {
			_, _ = h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, Now: h.tick()})
		}
		h.unchanged(before)
	}
	h.advance(1000 * time.Hour)
	for name, pass := range maintenancePasses {
		if n, err := pass(h.s, h.ctx, &store.MaintainParams{Now: h.tick()}); err != nil || n != 0 {
			t.Errorf("maintenance pass %s changed %d jobs (err %v), want none", name, n, err)
		}
	}
	h.unchanged(before)
	checkJob(t, before)
}

// testAttemptRule (LI-2): attempt starts at 0 and only a claim raises it,
// by exactly one, across retries, releases and lease expiries; the retry
// budget (max_attempts) counts failed attempts only (issue 13, item 2).
func testAttemptRule(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running, maxAttempts(3)) // attempt 1
	h.fail(f, "network")                            // retrying, 1 failure
	h.advance(time.Hour)
	h.pass(store.Store.JobPromoteDue, 1)
	h.claim(&f) // attempt 2
	h.release(f)
	h.pass(store.Store.JobRequeueStalled, 1) // a release uses no retry
	h.claim(&f)                              // attempt 3
	h.advance(2 * leaseTTL)
	h.pass(store.Store.JobStallExpired, 1)
	h.pass(store.Store.JobRequeueStalled, 1) // a lost lease does: 2 failures
	h.claim(&f)                              // attempt 4
	h.start(f)
	h.fail(f, "network") // 3 failures of 3: dead-lettered
	s := h.snap(f.ID)
	if s.Job.State != lifecycle.DeadLettered || s.Job.Attempt != 4 || s.Job.Failures != 3 || s.Job.ReasonCode != lifecycle.ReasonExhaustedRetries {
		t.Fatalf("state %s attempt %d failures %d reason %s; want dead_lettered after 4 attempts, 3 failed (exhausted_retries)",
			s.Job.State, s.Job.Attempt, s.Job.Failures, s.Job.ReasonCode)
	}
	attempt, claims := 0, 0
	for _, ev := range s.Events {
		want := attempt
		if ev.Type == lifecycle.EventClaimed {
			want++
			claims++
		}
		if ev.Attempt != want {
			t.Errorf("event rev %d (%s): attempt %d, want %d", ev.Rev, ev.Type, ev.Attempt, want)
		}
		attempt = ev.Attempt
	}
	if claims != 4 {
		t.Errorf("%d claimed events, want 4", claims)
	}
	checkJob(t, s)
	// A job released on its last attempt is requeued (a graceful stop costs
	// no retry); one whose last lease expired is dead-lettered, not requeued.
	g := h.build(lifecycle.Running, maxAttempts(1))
	h.release(g)
	h.pass(store.Store.JobRequeueStalled, 1)
	if j := h.must(g.ID, lifecycle.Queued); j.Attempt != 1 || j.Failures != 0 {
		t.Errorf("released on its last attempt: attempt %d failures %d, want 1 and 0", j.Attempt, j.Failures)
	}
	x := h.expired(maxAttempts(1))
	h.pass(store.Store.JobRequeueStalled, 1)
	if j := h.must(x.ID, lifecycle.DeadLettered); j.Attempt != 1 || j.Failures != 1 || j.ReasonCode != lifecycle.ReasonLeaseExpired {
		t.Errorf("lease lost on its last attempt: attempt %d failures %d reason %s, want 1, 1, lease_expired", j.Attempt, j.Failures, j.ReasonCode)
	}
	checkJob(t, h.snap(g.ID))
	checkJob(t, h.snap(x.ID))
}

// testTimestamps (LI-3): created_at <= started_at <= finished_at on jobs
// that took every path, and started_at is the first start, kept across
// attempts.
func testTimestamps(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	for _, s := range lifecycle.States {
		f := h.build(s)
		checkTimes(t, h.get(f.ID))
	}
	f := h.build(lifecycle.Retrying)
	first := *h.get(f.ID).StartedAt
	h.advance(time.Hour)
	h.system(f, lifecycle.Command{Op: lifecycle.OpPromote})
	h.claim(&f)
	h.start(f)
	h.complete(f)
	j := h.get(f.ID)
	if !j.StartedAt.Equal(first) || !j.FinishedAt.After(first) || j.FinishedAt.Before(j.CreatedAt) {
		t.Errorf("started_at %s finished_at %s: want the first start %s kept, finished after it", j.StartedAt, j.FinishedAt, first)
	}
}

// testProvenance (LI-4): every terminal job, however it got there, has a
// provenance record that matches it; no live job has one.
func testProvenance(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	var ids []string
	for _, s := range lifecycle.States {
		ids = append(ids, h.build(s).ID)
	}
	// Terminal by a maintenance pass, with several attempts behind it.
	f := h.expired(maxAttempts(1))
	h.system(f, lifecycle.Command{Op: lifecycle.OpRequeue})
	ids = append(ids, f.ID)
	for _, id := range ids {
		checkJob(t, h.snap(id)) // checks the record, or its absence for a live job
	}
}

// testDigest (LI-4): the provenance digest is the digest of the result as
// the store keeps it, so a reader can check one against the other. Results
// are sent as many JSON encoders write them: with insignificant whitespace,
// and with characters a Go encoder escapes.
func testDigest(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	for _, result := range []string{`{"answer":42}`, `{"answer": 42, "tags": ["a", "b"]}`, `{"html":"<b>&</b>"}`} {
		f := h.build(lifecycle.Running)
		res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: h.own(f), Result: json.RawMessage(result)}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("complete: %v %v", err, res[0].Err)
		}
		s := h.snap(f.ID)
		if s.Prov == nil || s.Prov.ResultDigest != digestOf(s.Job) {
			t.Errorf("result sent as %s, stored as %s: provenance digest %q, but the stored result digests to %q",
				result, s.Job.Result, s.Prov.ResultDigest, digestOf(s.Job))
		}
	}
}

// testOneLivePerKey (LI-5): jobs with a few keys driven through many
// lifecycles: at no point do two live jobs share a (tenant, key).
func testOneLivePerKey(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	ends := []lifecycle.State{lifecycle.Succeeded, lifecycle.Cancelled, lifecycle.DeadLettered, lifecycle.Running, lifecycle.Failed}
	for round, end := range ends {
		for _, key := range []string{"a", "b"} {
			for _, tenant := range []string{"t1", "t2"} {
				res := h.enqueueKey(tenant, key)
				if round > 0 && ends[round-1] == lifecycle.Running && !res.Existing {
					t.Errorf("round %d: (%s, %s) got a new job while the running one is live", round, tenant, key)
				}
				if res.Existing {
					continue
				}
				f := fixture{ID: res.Job.ID, Queue: res.Job.Queue}
				h.drive(&f, end)
			}
		}
		live := map[[2]string]string{}
		jobs, err := h.s.JobList(h.ctx, &store.JobListParams{Limit: store.MaxBatch})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, j := range jobs {
			if j.DedupeKey == "" || j.State.Terminal() {
				continue
			}
			k := [2]string{j.Tenant, j.DedupeKey}
			if other, ok := live[k]; ok {
				t.Errorf("round %d: jobs %s and %s are both live with key %v (LI-5)", round, other, j.ID, k)
			}
			live[k] = j.ID
		}
	}
}

// drive takes a queued job to succeeded, cancelled, dead_lettered, failed
// or running.
func (h *harness) drive(f *fixture, to lifecycle.State) {
	h.t.Helper()
	switch to {
	case lifecycle.Cancelled:
		h.cancel(*f, true)
		return
	case lifecycle.DeadLettered:
		h.system(*f, lifecycle.Command{Op: lifecycle.OpDeadLetter, ReasonCode: lifecycle.ReasonValidationFailed})
		return
	}
	h.claim(f)
	h.start(*f)
	switch to {
	case lifecycle.Succeeded:
		h.complete(*f)
	case lifecycle.Failed:
		h.fail(*f, "compile_error")
	}
	h.must(f.ID, to)
}
