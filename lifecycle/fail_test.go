package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestFailOutcomes: where a failed attempt goes, by error class, the attempts
// left and the on_exhausted policy, and when a retry is due (kept to the
// microsecond, the precision the stores keep).
func TestFailOutcomes(t *testing.T) {
	t.Parallel()
	backoff := lifecycle.Backoff{Base: 2 * time.Second, Factor: 3, Max: time.Minute}
	cases := []struct {
		name     string
		spec     func(*lifecycle.Spec)
		from     lifecycle.State
		err      *lifecycle.JobError
		cmd      func(*lifecycle.Command, time.Time)
		want     lifecycle.State
		reason   string
		runAt    func(w *world, now time.Time) time.Time
		errorSet bool // the terminal error field, not only last_error
	}{
		{name: "transient with attempts left", err: &lifecycle.JobError{Code: "x", Class: lifecycle.ClassTransient},
			want: lifecycle.Retrying, runAt: func(w *world, now time.Time) time.Time {
				return now.Add(lifecycle.DefaultBackoff.Delay(testJobID, w.job.Attempt)).Truncate(time.Microsecond)
			}},
		{name: "no class: the default rules make network transient", err: &lifecycle.JobError{Code: "network"}, want: lifecycle.Retrying},
		{name: "no class, unknown code: transient", err: &lifecycle.JobError{Code: "weird"}, want: lifecycle.Retrying},
		{name: "no error at all: transient", want: lifecycle.Retrying},
		{name: "no class: the default rules make compile_error permanent", err: &lifecycle.JobError{Code: "compile_error"}, want: lifecycle.Failed, errorSet: true},
		{name: "the reported class beats the rules", err: &lifecycle.JobError{Code: "network", Class: lifecycle.ClassPermanent}, want: lifecycle.Failed, errorSet: true},
		{name: "the command's backoff schedules the retry", err: &lifecycle.JobError{Code: "x"},
			cmd:  func(c *lifecycle.Command, _ time.Time) { c.Backoff = backoff },
			want: lifecycle.Retrying, runAt: func(w *world, now time.Time) time.Time {
				return now.Add(backoff.Delay(testJobID, w.job.Attempt)).Truncate(time.Microsecond)
			}},
		{name: "retry_at overrides the backoff", err: &lifecycle.JobError{Code: "x"},
			cmd:  func(c *lifecycle.Command, now time.Time) { c.RetryAt = ptr(now.Add(time.Hour)) },
			want: lifecycle.Retrying, runAt: func(_ *world, now time.Time) time.Time { return now.Add(time.Hour) }},
		{name: "a past retry_at is ignored", err: &lifecycle.JobError{Code: "x"},
			cmd:  func(c *lifecycle.Command, now time.Time) { c.RetryAt = ptr(now.Add(-time.Hour)) },
			want: lifecycle.Retrying, runAt: func(w *world, now time.Time) time.Time {
				return now.Add(lifecycle.DefaultBackoff.Delay(testJobID, w.job.Attempt)).Truncate(time.Microsecond)
			}},
		{name: "exhausted: dead-lettered by default", spec: oneAttempt, err: &lifecycle.JobError{Code: "x"},
			want: lifecycle.DeadLettered, reason: lifecycle.ReasonExhaustedRetries},
		{name: "exhausted under the failed policy", err: &lifecycle.JobError{Code: "x"},
			spec: func(s *lifecycle.Spec) { s.MaxAttempts, s.OnExhausted = 1, lifecycle.Failed },
			want: lifecycle.Failed, errorSet: true},
		{name: "timeout class with attempts left: retried", err: &lifecycle.JobError{Code: "slow", Class: lifecycle.ClassTimeout}, want: lifecycle.Retrying},
		{name: "timeout class exhausted: timed_out", spec: oneAttempt, err: &lifecycle.JobError{Code: "timeout"},
			want: lifecycle.TimedOut, reason: lifecycle.ReasonTimeout, errorSet: true},
		// DESIGN.md: timed_out requires error code timeout; the class, not
		// the code, says the attempt timed out (an SDK reports its own codes).
		{name: "timeout class with another code, exhausted: timed_out", spec: oneAttempt,
			err:  &lifecycle.JobError{Code: "upstream_slow", Class: lifecycle.ClassTimeout},
			want: lifecycle.TimedOut, reason: lifecycle.ReasonTimeout, errorSet: true},
		{name: "from cancel_requested, exhausted", spec: oneAttempt, from: lifecycle.CancelRequested, err: &lifecycle.JobError{Code: "x"},
			want: lifecycle.Failed, errorSet: true},
		{name: "from cancel_requested, attempts left: never retried", from: lifecycle.CancelRequested, err: &lifecycle.JobError{Code: "x"},
			want: lifecycle.Failed, errorSet: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			if tc.spec != nil {
				tc.spec(&spec)
			}
			if tc.from == "" {
				tc.from = lifecycle.Running
			}
			w := reach(t, spec, tc.from)
			now := w.now.Add(time.Second)
			cmd := ownerCmd(lifecycle.OpFail, w.job.LeaseID)
			cmd.Error = tc.err
			if tc.cmd != nil {
				tc.cmd(&cmd, now)
			}
			st, err := applyPure(t, w.job, cmd, now)
			if err != nil {
				t.Fatalf("fail: %v", err)
			}
			j := st.Job
			if j.State != tc.want {
				t.Fatalf("state = %s, want %s", j.State, tc.want)
			}
			if j.LastError == nil || j.LastError.Attempt != w.job.Attempt || j.LastError.Code == "" || j.LastError.Message == "" {
				t.Errorf("last_error = %+v, want a code, a message and attempt %d", j.LastError, w.job.Attempt)
			}
			if (j.Error != nil) != tc.errorSet {
				t.Errorf("error = %+v, want present=%v", j.Error, tc.errorSet)
			}
			if tc.reason != "" && j.ReasonCode != tc.reason {
				t.Errorf("reason_code = %q, want %q", j.ReasonCode, tc.reason)
			}
			if tc.runAt != nil && !j.RunAt.Equal(tc.runAt(w, now)) {
				t.Errorf("run_at = %s, want %s", j.RunAt, tc.runAt(w, now))
			}
			if len(st.Event.Details) == 0 || !strings.Contains(string(st.Event.Details), j.LastError.Code) {
				t.Errorf("event details %s do not record the error", st.Event.Details)
			}
		})
	}
}

// TestTimeOutOutcomes: the attempt timeout fails the attempt like a timeout
// error; the overall deadline ends the job from any non-terminal state.
func TestTimeOutOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("attempt timeout, attempts left", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		withTimeout(&spec)
		w := reach(t, spec, lifecycle.Running)
		ev := w.mustAt(t, *w.job.TimeoutAt, systemCmd(lifecycle.OpTimeOut))
		if w.job.State != lifecycle.Retrying || ev.Type != lifecycle.EventRetryScheduled || w.job.LastError.Code != lifecycle.ReasonTimeout {
			t.Fatalf("state %s event %s last_error %+v; want retrying with code timeout", w.job.State, ev.Type, w.job.LastError)
		}
	})
	t.Run("attempt timeout, exhausted", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		withTimeout(&spec)
		spec.MaxAttempts = 1
		w := reach(t, spec, lifecycle.Running)
		w.mustAt(t, w.job.TimeoutAt.Add(time.Second), systemCmd(lifecycle.OpTimeOut))
		if w.job.State != lifecycle.TimedOut || w.job.Error.Code != lifecycle.ReasonTimeout {
			t.Fatalf("state %s error %+v; want timed_out with code timeout", w.job.State, w.job.Error)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		withDeadline(&spec)
		w := reach(t, spec, lifecycle.Scheduled)
		c := systemCmd(lifecycle.OpTimeOut)
		c.Deadline = true
		w.mustAt(t, *w.job.Deadline, c)
		if w.job.State != lifecycle.TimedOut || w.job.Error.Code != lifecycle.ReasonDeadline || w.job.ReasonCode != lifecycle.ReasonDeadline {
			t.Fatalf("state %s error %+v reason %q; want timed_out with code deadline", w.job.State, w.job.Error, w.job.ReasonCode)
		}
	})
}
