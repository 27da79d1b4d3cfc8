package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func stepCmdOf(seq int, name string) func(*world, lifecycle.Actor) lifecycle.Command {
	return func(w *world, _ lifecycle.Actor) lifecycle.Command {
		c := ownerCmd(lifecycle.OpStep, ownerLease(w.job))
		c.StepSeq, c.StepName = seq, name
		return c
	}
}

func suspendCmdOf(d time.Duration) func(*world, lifecycle.Actor) lifecycle.Command {
	return func(w *world, _ lifecycle.Actor) lifecycle.Command {
		c := ownerCmd(lifecycle.OpSuspend, ownerLease(w.job))
		c.WakeAt, c.Reason = ptr(w.now.Add(d)), "signal:approve"
		return c
	}
}

// reachSuspended builds a job its handler suspended after one step.
func reachSuspended(t fataler, spec lifecycle.Spec) *world {
	w := reach(t, spec, lifecycle.Running)
	w.must(t, stepCmdOf(1, "charge")(w, lifecycle.ActorOwner))
	w.must(t, suspendCmdOf(time.Hour)(w, lifecycle.ActorOwner))
	return w
}

// TestSuspendSpendsNoAttempt: a job that suspends and is woken many times
// goes through as many claims (attempt +1 each, LI-2) without using up its
// retry budget, and its log replays and verifies at every point.
func TestSuspendSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.MaxAttempts = 1
	w := reach(t, spec, lifecycle.Running)
	for i := range 5 {
		w.must(t, stepCmdOf(i+1, "step")(w, lifecycle.ActorOwner))
		ev := w.must(t, suspendCmdOf(time.Minute)(w, lifecycle.ActorOwner))
		if w.job.State != lifecycle.Scheduled || w.job.LeaseID != "" || ev.RunAt == nil || !ev.RunAt.Equal(w.job.RunAt) {
			t.Fatalf("after suspend: state %s lease %q run_at %v (event %v)", w.job.State, w.job.LeaseID, w.job.RunAt, ev.RunAt)
		}
		if reason, ok := lifecycle.Suspended(w.job); !ok || reason != "signal:approve" {
			t.Fatalf("Suspended = %q, %v", reason, ok)
		}
		if i%2 == 0 {
			w.mustAt(t, w.job.RunAt, systemCmd(lifecycle.OpPromote))
		} else {
			w.must(t, clientCmd(lifecycle.OpWake))
		}
		if w.job.ReasonCode != "" {
			t.Fatalf("a woken job keeps reason %q", w.job.ReasonCode)
		}
		w.claim(t)
		w.must(t, ownerCmd(lifecycle.OpStart, w.job.LeaseID))
		if err := lifecycle.Verify(w.job, w.events); err != nil {
			t.Fatalf("verify after wake %d: %v", i, err)
		}
	}
	if w.job.Attempt != 6 || w.job.Failures != 0 || w.job.Usage.Steps != 5 {
		t.Fatalf("attempt %d failures %d steps %d; want 6, 0, 5", w.job.Attempt, w.job.Failures, w.job.Usage.Steps)
	}
	d, ok := lifecycle.StepOf(w.events[len(w.events)-5])
	if !ok || d.Seq != 5 || d.Name != "step" {
		t.Fatalf("StepOf = %+v, %v", d, ok)
	}
}

// TestStepRejections: a step by a stale lease, a wake of a job that was
// never suspended and malformed step commands are refused.
func TestStepRejections(t *testing.T) {
	t.Parallel()
	w := reach(t, baseSpec(), lifecycle.Running)
	stale := stepCmdOf(1, "x")(w, lifecycle.ActorOwner)
	stale.LeaseID = "lease-old"
	if _, err := lifecycle.Apply(w.job, stale, w.now.Add(time.Second)); !errors.Is(err, lifecycle.ErrStaleLease) {
		t.Errorf("stale step: %v", err)
	}
	noName := stepCmdOf(1, "")(w, lifecycle.ActorOwner)
	if _, err := lifecycle.Apply(w.job, noName, w.now.Add(time.Second)); !errors.Is(err, lifecycle.ErrValidation) {
		t.Errorf("step without a name: %v", err)
	}
	noWake := ownerCmd(lifecycle.OpSuspend, w.job.LeaseID)
	if _, err := lifecycle.Apply(w.job, noWake, w.now.Add(time.Second)); !errors.Is(err, lifecycle.ErrValidation) {
		t.Errorf("suspend without a wake time: %v", err)
	}
	sched := reach(t, baseSpec(), lifecycle.Scheduled)
	if _, err := lifecycle.Apply(sched.job, clientCmd(lifecycle.OpWake), t0.Add(time.Second)); !errors.Is(err, lifecycle.ErrInvalidTransition) {
		t.Errorf("wake of a job scheduled by its producer: %v", err)
	}
}
