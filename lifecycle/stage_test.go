package lifecycle_test

import (
	"slices"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
)

// TestFailureStageOf: where a job died, after each way one does.
func TestFailureStageOf(t *testing.T) {
	t.Parallel()
	phased := func(t *testing.T, spec lifecycle.Spec, phase string) *world {
		w := reach(t, spec, lifecycle.Running)
		hb := ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID)
		hb.Phase = phase
		w.must(t, hb)
		return w
	}
	expire := func(t *testing.T, w *world) *world {
		w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
		w.must(t, systemCmd(lifecycle.OpRequeue))
		return w
	}
	oneAttempt := func() lifecycle.Spec { s := baseSpec(); s.MaxAttempts = 1; return s }
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) *world
		want  lifecycle.Stage
	}{
		{"succeeded", func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Succeeded) }, ""},
		{"retrying", func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Retrying) }, ""},
		{"bad payload, never claimed", func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.DeadLettered) }, lifecycle.StageInput},
		{"policy, never claimed", func(t *testing.T) *world {
			w := reach(t, baseSpec(), lifecycle.Queued)
			c := deadLetterCmd(lifecycle.ActorSystem, "")
			c.ReasonCode = lifecycle.ReasonPolicyViolation
			w.must(t, c)
			return w
		}, lifecycle.StageFetch},
		{"lease ran out before the start", func(t *testing.T) *world {
			w := reach(t, oneAttempt(), lifecycle.Claimed)
			return expire(t, w)
		}, lifecycle.StageFetch},
		{"handler failed", func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Failed) }, lifecycle.StageExec},
		{"timed out", func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.TimedOut) }, lifecycle.StageExec},
		{"lease ran out while running", func(t *testing.T) *world { return expire(t, reach(t, oneAttempt(), lifecycle.Running)) }, lifecycle.StageExec},
		{"died while starting", func(t *testing.T) *world {
			w := phased(t, baseSpec(), "starting")
			w.must(t, failCmd(w.job.LeaseID, "runner_startup", lifecycle.ClassPermanent))
			return w
		}, lifecycle.StageInput},
		{"died while uploading", func(t *testing.T) *world {
			w := phased(t, oneAttempt(), "running")
			hb := ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID)
			hb.Phase = "uploading"
			w.must(t, hb)
			return expire(t, w)
		}, lifecycle.StageOutput},
		{"died while committing", func(t *testing.T) *world {
			w := phased(t, baseSpec(), "committing")
			w.must(t, deadLetterCmd(lifecycle.ActorOwner, w.job.LeaseID))
			return w
		}, lifecycle.StageInput}, // its reason code, parse_error, says input
		{"gave up while committing", func(t *testing.T) *world {
			w := phased(t, baseSpec(), "committing")
			c := deadLetterCmd(lifecycle.ActorOwner, w.job.LeaseID)
			c.ReasonCode = lifecycle.ReasonInfrastructureFailure
			w.must(t, c)
			return w
		}, lifecycle.StageCommit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.build(t)
			if got := lifecycle.FailureStageOf(w.job); got != tc.want {
				t.Errorf("stage of %s job (reason %q, phase %q, attempt %d): %q, want %q", w.job.State, w.job.ReasonCode, w.job.Phase, w.job.Attempt, got, tc.want)
			}
		})
	}
}

// TestPhaseEvents: a heartbeat or checkpoint that enters a new phase
// records it in its event; one that repeats the phase records none.
func TestPhaseEvents(t *testing.T) {
	t.Parallel()
	w := reach(t, baseSpec(), lifecycle.Running)
	beat := func(op lifecycle.Op, phase string) lifecycle.Event {
		c := ownerCmd(op, w.job.LeaseID)
		c.Phase = phase
		return w.must(t, c)
	}
	var got []string
	for _, step := range []struct {
		op    lifecycle.Op
		phase string
	}{{lifecycle.OpHeartbeat, "starting"}, {lifecycle.OpHeartbeat, "starting"}, {lifecycle.OpHeartbeat, ""},
		{lifecycle.OpCheckpoint, "running"}, {lifecycle.OpHeartbeat, "uploading"}} {
		ev := beat(step.op, step.phase)
		if p, ok := lifecycle.PhaseOf(ev); ok {
			got = append(got, p)
		}
	}
	if want := []string{"starting", "running", "uploading"}; !slices.Equal(got, want) {
		t.Errorf("phases in the events %v, want %v", got, want)
	}
	if w.job.Phase != "uploading" {
		t.Errorf("the job's phase is %q, want uploading", w.job.Phase)
	}
	if _, err := lifecycle.Replay(w.events); err != nil {
		t.Errorf("replay of the log with phase events: %v", err)
	}
}
