package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testInputs: input that no store can keep alike is refused by the
// lifecycle with the same validation error on every backend, and nothing is
// written; a handler's failure message is recorded, not refused, whatever
// its bytes; a retry delay is resolved on the store's clock.
func testInputs(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("job_id_with_nul", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.JobGet(h.ctx, "job\x00")
		rejected(t, err, store.ErrValidation)
		_, err = h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: "\xff", Now: h.tick()})
		rejected(t, err, store.ErrValidation)
		_, err = h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q\x00"}, Limit: 1, LeaseTTL: leaseTTL, Now: h.tick()})
		rejected(t, err, store.ErrValidation)
	})
	for _, c := range []struct {
		name     string
		existing bool
	}{{"depends_on_outside_a_run/existing_job", true}, {"depends_on_outside_a_run/unknown_job", false}} {
		// Only the run engine unblocks, and only a run's jobs: a plain
		// job's depends_on is refused, naming runs, whether the ids exist
		// or not, and the whole batch with it.
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			dep := "no-such-job"
			var before snapshot
			if c.existing {
				f := h.build(lifecycle.Succeeded)
				dep, before = f.ID, h.snap(f.ID)
			}
			count := h.census()
			at := h.tick()
			_, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{h.spec(*at), h.spec(*at, dependsOn(dep))}, ActorID: "producer", Now: at})
			rejected(t, err, store.ErrValidation)
			if err == nil || !strings.Contains(err.Error(), "stint runs create") || !strings.Contains(err.Error(), "CreateRun") || !strings.Contains(err.Error(), "job 1 of the batch") {
				t.Errorf("error %v does not name the job and say to create a run", err)
			}
			if after := h.census(); after != count {
				t.Errorf("a refused batch changed the store from %+v to %+v", count, after)
			}
			if c.existing {
				h.unchanged(before)
			}
		})
	}
	t.Run("run_id_outside_a_run", func(t *testing.T) {
		// A job joins a run only through the run engine; a plain job with
		// a run's id would show in the run without counting for it.
		t.Parallel()
		h := newHarness(t, newStore)
		count := h.census()
		at := h.tick()
		for _, spec := range []lifecycle.Spec{{RunID: "run-1"}, {StepIndex: 2}} {
			s := h.spec(*at)
			s.RunID, s.StepIndex = spec.RunID, spec.StepIndex
			_, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{s}, ActorID: "producer", Now: at})
			rejected(t, err, store.ErrValidation)
			if err == nil || !strings.Contains(err.Error(), "set by runs only") {
				t.Errorf("error %v does not say run_id is set by runs", err)
			}
		}
		if after := h.census(); after != count {
			t.Errorf("a refused batch changed the store from %+v to %+v", count, after)
		}
	})
	for _, c := range []struct {
		name   string
		result json.RawMessage
	}{
		{"result_invalid_utf8", json.RawMessage("\"\xff\"")},
		{"result_too_deep", json.RawMessage(strings.Repeat(`{"a":`, lifecycle.MaxJSONDepth+1) + "1" + strings.Repeat("}", lifecycle.MaxJSONDepth+1))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(lifecycle.Running)
			before := h.snap(f.ID)
			res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: h.own(f), Result: c.result}})
			if err == nil {
				err = res[0].Err
			}
			rejected(t, err, store.ErrValidation)
			h.unchanged(before)
		})
	}
	t.Run("failure_message_with_nul", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		f := h.build(lifecycle.Running)
		j, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: h.own(f), Error: lifecycle.JobError{Code: "io", Message: "read \x00\xff failed"}})
		if err != nil {
			t.Fatalf("a failure whose message has a NUL byte and invalid UTF-8: %v; want it recorded", err)
		}
		if want := "read \uFFFD\uFFFD failed"; j.LastError == nil || j.LastError.Message != want {
			t.Errorf("recorded error %+v, want message %q", j.LastError, want)
		}
		if got := h.get(f.ID); got.LastError == nil || got.LastError.Message != j.LastError.Message {
			t.Errorf("the store kept %+v, the call returned %+v", got.LastError, j.LastError)
		}
		h.census()
	})
	t.Run("retry_after_on_the_store_clock", func(t *testing.T) {
		t.Parallel()
		testRetryAfter(t, newStore)
	})
}

// testRetryAfter: a fail with RetryAfter and no Now is due that long after
// the failure by the store's clock (the database's on PostgreSQL), whatever
// the worker's clock says; with a Now, after that Now.
func testRetryAfter(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "clock", Queue: h.name("q")}}})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{res[0].Job.Queue}, Limit: 1, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	const delay = 2 * time.Second
	j, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
		Error: lifecycle.JobError{Code: "busy", Message: "try later"}, RetryAfter: delay})
	if err != nil || j.State != lifecycle.Retrying {
		t.Fatalf("fail: %s, %v; want retrying", j.State, err)
	}
	s := h.snap(j.ID)
	failedAt := s.Events[len(s.Events)-1].At // the store's clock at the failure
	if want := failedAt.Add(delay); !s.Job.RunAt.Equal(want) {
		t.Errorf("run_at %s; want the failure's time on the store's clock (%s) + %s = %s", s.Job.RunAt, failedAt, delay, want)
	}
	checkJob(t, s)

	// With an explicit Now (the harness's, far from this machine's clock),
	// the delay counts from that Now.
	f := h.build(lifecycle.Running)
	p := store.JobFailParams{OwnerParams: h.own(f), Error: lifecycle.JobError{Code: "busy", Message: "later"}, RetryAfter: delay}
	j, err = h.s.JobFail(h.ctx, &p)
	if err != nil || !j.RunAt.Equal(p.Now.Add(delay)) {
		t.Errorf("fail at %s with retry after %s: run_at %s, %v; want %s", p.Now, delay, j.RunAt, err, p.Now.Add(delay))
	}
	p = store.JobFailParams{OwnerParams: h.own(f), RetryAfter: -time.Second}
	_, err = h.s.JobFail(h.ctx, &p)
	rejected(t, err, store.ErrValidation)
}
