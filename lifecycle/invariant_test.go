package lifecycle_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestCheckAcceptsReachableJobs: every job built by legal steps meets Check.
func TestCheckAcceptsReachableJobs(t *testing.T) {
	t.Parallel()
	for _, s := range lifecycle.States {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			if err := lifecycle.Check(reach(t, baseSpec(), s).job); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckRejectsBrokenJobs breaks one rule at a time on an otherwise valid job.
func TestCheckRejectsBrokenJobs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		from   lifecycle.State
		mutate func(j *lifecycle.Job)
		inMsg  string
	}{
		{"unknown state", lifecycle.Queued, func(j *lifecycle.Job) { j.State = "paused" }, "unknown state"},
		{"owner in queued", lifecycle.Queued, func(j *lifecycle.Job) { j.Owner = worker }, "owner and lease must be absent"},
		{"lease id in queued", lifecycle.Queued, func(j *lifecycle.Job) { j.LeaseID = "lease-1" }, "owner and lease must be absent"},
		{"lease expiry in stalled", lifecycle.Stalled, func(j *lifecycle.Job) { j.LeaseExpiresAt = ptr(t0) }, "owner and lease must be absent"},
		{"owner in succeeded", lifecycle.Succeeded, func(j *lifecycle.Job) { j.Owner = worker }, "owner and lease must be absent"},
		{"missing lease in running", lifecycle.Running, func(j *lifecycle.Job) { j.LeaseID = "" }, "must be present"},
		{"missing owner in claimed", lifecycle.Claimed, func(j *lifecycle.Job) { j.Owner = "" }, "must be present"},
		{"missing lease expiry in cancel_requested", lifecycle.CancelRequested, func(j *lifecycle.Job) { j.LeaseExpiresAt = nil }, "must be present"},
		{"cancel_requested without cancel deadline", lifecycle.CancelRequested, func(j *lifecycle.Job) { j.CancelDeadline = nil }, "cancel_deadline"},
		{"cancel deadline in running", lifecycle.Running, func(j *lifecycle.Job) { j.CancelDeadline = ptr(t0.Add(time.Hour)) }, "cancel_deadline"},
		{"timeout_at in queued", lifecycle.Queued, func(j *lifecycle.Job) { j.TimeoutAt = ptr(t0.Add(time.Hour)) }, "timeout_at"},
		{"rev 0", lifecycle.Queued, func(j *lifecycle.Job) { j.Rev = 0 }, "rev 0"},
		{"failures above max_attempts", lifecycle.Retrying, func(j *lifecycle.Job) { j.Failures, j.Attempt = j.MaxAttempts+1, j.MaxAttempts+1 }, "failures"},
		{"failures above attempt", lifecycle.Retrying, func(j *lifecycle.Job) { j.Failures = j.Attempt + 1 }, "failures"},
		{"negative attempt", lifecycle.Queued, func(j *lifecycle.Job) { j.Attempt = -1 }, "attempt"},
		{"started_at before created_at", lifecycle.Running, func(j *lifecycle.Job) { j.StartedAt = ptr(j.CreatedAt.Add(-time.Second)) }, "LI-3"},
		{"finished_at before started_at", lifecycle.Succeeded, func(j *lifecycle.Job) { j.FinishedAt = ptr(j.StartedAt.Add(-time.Second)) }, "LI-3"},
		{"finished_at before created_at", lifecycle.Denied, func(j *lifecycle.Job) { j.FinishedAt = ptr(j.CreatedAt.Add(-time.Second)) }, "LI-3"},
		{"terminal without finished_at", lifecycle.Cancelled, func(j *lifecycle.Job) { j.FinishedAt = nil }, "finished_at"},
		{"finished_at before terminal", lifecycle.Retrying, func(j *lifecycle.Job) { j.FinishedAt = ptr(j.UpdatedAt) }, "finished_at"},
		{"result in queued", lifecycle.Queued, func(j *lifecycle.Job) { j.Result = json.RawMessage(`1`) }, "must be absent before a terminal state"},
		{"result_ptr in running", lifecycle.Running, func(j *lifecycle.Job) { j.ResultPtr = "s3://bucket/r" }, "must be absent before a terminal state"},
		{"error in retrying", lifecycle.Retrying, func(j *lifecycle.Job) { j.Error = j.LastError }, "must be absent before a terminal state"},
		{"succeeded without result", lifecycle.Succeeded, func(j *lifecycle.Job) { j.Result = nil }, "result must be present"},
		{"succeeded with error", lifecycle.Succeeded, func(j *lifecycle.Job) { j.Error = &lifecycle.JobError{Code: "x", Message: "x"} }, "error absent"},
		{"result in failed", lifecycle.Failed, func(j *lifecycle.Job) { j.Result = json.RawMessage(`{}`) }, "result must be absent"},
		{"result_ptr in cancelled", lifecycle.Cancelled, func(j *lifecycle.Job) { j.ResultPtr = "s3://bucket/r" }, "result must be absent"},
		{"missing error in failed", lifecycle.Failed, func(j *lifecycle.Job) { j.Error = nil }, "error must be present"},
		{"timed_out with wrong code", lifecycle.TimedOut, func(j *lifecycle.Job) { j.Error.Code = "network" }, "timeout or deadline"},
		{"timed_out without error", lifecycle.TimedOut, func(j *lifecycle.Job) { j.Error = nil }, "timeout or deadline"},
		{"cancelled without reason", lifecycle.Cancelled, func(j *lifecycle.Job) { j.Reason = "" }, "reason"},
		{"halted without reason", lifecycle.Halted, func(j *lifecycle.Job) { j.Reason = "" }, "reason"},
		{"denied without reason", lifecycle.Denied, func(j *lifecycle.Job) { j.Reason = "" }, "reason"},
		{"dead_lettered with bad reason code", lifecycle.DeadLettered, func(j *lifecycle.Job) { j.ReasonCode = "bored" }, "reason_code"},
		{"dead_lettered without last_error", lifecycle.DeadLettered, func(j *lifecycle.Job) { j.LastError = nil }, "last_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := reach(t, baseSpec(), tc.from).job
			if err := lifecycle.Check(j); err != nil {
				t.Fatalf("fixture already invalid: %v", err)
			}
			tc.mutate(&j)
			err := lifecycle.Check(j)
			if err == nil {
				t.Fatalf("Check accepted a job with %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.inMsg) || !strings.Contains(err.Error(), testJobID) {
				t.Errorf("error %q should name the job and say %q", err, tc.inMsg)
			}
		})
	}
}

// TestCloneIsDeep: a job's clone shares no pointer, map or slice with it, as
// Clone's doc promises ("a transition never aliases its input").
func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	for _, s := range []lifecycle.State{lifecycle.CancelRequested, lifecycle.Succeeded, lifecycle.Retrying} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.Deadline = ptr(t0.Add(time.Hour))
			spec.Timeout = time.Minute
			spec.Budget = &lifecycle.Budget{MaxSteps: 100}
			w := reach(t, spec, s)
			j := w.job
			j.DependsOn = []string{"job-0"}
			j.Checkpoint, j.Progress = json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`)
			c := j.Clone()
			if !reflect.DeepEqual(c, j) {
				t.Fatalf("clone differs:\n got %+v\nwant %+v", c, j)
			}
			if shared := sharedRefs(reflect.ValueOf(j), reflect.ValueOf(c), "Job"); len(shared) > 0 {
				t.Errorf("Clone shares memory with the original through %v", shared)
			}
		})
	}
}
