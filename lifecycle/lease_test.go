package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestLeaseStateOf: seed-ci's lease states, derived from the job's lease
// fields after each way a lease begins and ends.
func TestLeaseStateOf(t *testing.T) {
	t.Parallel()
	running := func(t *testing.T, spec lifecycle.Spec) *world { return reach(t, spec, lifecycle.Running) }
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) *world
		at    func(w *world) time.Time // when judged; default: the last step's time
		want  lifecycle.LeaseState
	}{
		{name: "never leased", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Queued) }, want: ""},
		{name: "claimed", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Claimed) }, want: lifecycle.LeaseGranted},
		{name: "claimed past expiry", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Claimed) },
			at: func(w *world) time.Time { return *w.job.LeaseExpiresAt }, want: lifecycle.LeaseExpired},
		{name: "running", build: func(t *testing.T) *world { return running(t, baseSpec()) }, want: lifecycle.LeaseActive},
		{name: "cancel requested", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.CancelRequested) }, want: lifecycle.LeaseActive},
		{name: "stalled by the reaper", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Stalled) }, want: lifecycle.LeaseExpired},
		{name: "requeued after expiry", build: func(t *testing.T) *world {
			w := reach(t, baseSpec(), lifecycle.Stalled)
			w.must(t, systemCmd(lifecycle.OpRequeue))
			return w
		}, want: lifecycle.LeaseExpired},
		{name: "dead-lettered after expiry", build: func(t *testing.T) *world {
			spec := baseSpec()
			spec.MaxAttempts = 1
			w := reach(t, spec, lifecycle.Stalled)
			w.must(t, systemCmd(lifecycle.OpRequeue))
			return w
		}, want: lifecycle.LeaseExpired},
		{name: "released", build: func(t *testing.T) *world {
			w := running(t, baseSpec())
			w.must(t, ownerCmd(lifecycle.OpStall, w.job.LeaseID))
			return w
		}, want: lifecycle.LeaseReleased},
		{name: "requeued after release", build: func(t *testing.T) *world {
			w := running(t, baseSpec())
			w.must(t, ownerCmd(lifecycle.OpStall, w.job.LeaseID))
			w.must(t, systemCmd(lifecycle.OpRequeue))
			return w
		}, want: lifecycle.LeaseReleased},
		{name: "succeeded", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Succeeded) }, want: lifecycle.LeaseCompleted},
		{name: "failed", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Failed) }, want: lifecycle.LeaseCompleted},
		{name: "retrying after its failure", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Retrying) }, want: lifecycle.LeaseCompleted},
		{name: "halted by its handler", build: func(t *testing.T) *world { return reach(t, baseSpec(), lifecycle.Halted) }, want: lifecycle.LeaseCompleted},
		{name: "dead-lettered by its handler", build: func(t *testing.T) *world {
			w := running(t, baseSpec())
			w.must(t, deadLetterCmd(lifecycle.ActorOwner, w.job.LeaseID))
			return w
		}, want: lifecycle.LeaseCompleted},
		{name: "cancel acknowledged", build: func(t *testing.T) *world {
			w := reach(t, baseSpec(), lifecycle.CancelRequested)
			w.must(t, ownerCmd(lifecycle.OpAckCancel, w.job.LeaseID))
			return w
		}, want: lifecycle.LeaseCancelled},
		{name: "hard cancel", build: func(t *testing.T) *world {
			w := running(t, baseSpec())
			w.must(t, clientCmd(lifecycle.OpCancelHard))
			return w
		}, want: lifecycle.LeaseRevoked},
		{name: "cancel never acknowledged", build: func(t *testing.T) *world {
			w := reach(t, baseSpec(), lifecycle.CancelRequested)
			w.mustAt(t, *w.job.CancelDeadline, systemCmd(lifecycle.OpForceCancel))
			return w
		}, want: lifecycle.LeaseRevoked},
		{name: "timed out with attempts left", build: func(t *testing.T) *world {
			spec := baseSpec()
			spec.Timeout = 10 * time.Second
			w := running(t, spec)
			w.mustAt(t, *w.job.TimeoutAt, systemCmd(lifecycle.OpTimeOut))
			return w
		}, want: lifecycle.LeaseRevoked},
		{name: "timed out, promoted again", build: func(t *testing.T) *world {
			spec := baseSpec()
			spec.Timeout = 10 * time.Second
			w := running(t, spec)
			w.mustAt(t, *w.job.TimeoutAt, systemCmd(lifecycle.OpTimeOut))
			w.mustAt(t, w.job.RunAt, systemCmd(lifecycle.OpPromote))
			return w
		}, want: lifecycle.LeaseRevoked},
		{name: "claimed again", build: func(t *testing.T) *world {
			w := reach(t, baseSpec(), lifecycle.Retrying)
			w.mustAt(t, w.job.RunAt, systemCmd(lifecycle.OpPromote))
			w.claim(t)
			return w
		}, want: lifecycle.LeaseGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.build(t)
			at := w.now
			if tc.at != nil {
				at = tc.at(w)
			}
			if got := lifecycle.LeaseStateOf(w.job, at); got != tc.want {
				t.Errorf("lease state of %s job (lease ended by %q, reason %q): %q, want %q", w.job.State, w.job.LeaseEndedBy, w.job.ReasonCode, got, tc.want)
			}
		})
	}
}
