package lifecycle_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestIdempotentRepeats: repeating a transition whose result already holds
// returns the job unchanged with no event, even much later.
func TestIdempotentRepeats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		from lifecycle.State
		spec func(*lifecycle.Spec)
		cmd  func(lease string) lifecycle.Command
	}{
		{name: "start", from: lifecycle.Claimed, cmd: func(l string) lifecycle.Command { return ownerCmd(lifecycle.OpStart, l) }},
		{name: "complete", from: lifecycle.Running, cmd: completeCmd},
		{name: "complete of a cancel_requested job", from: lifecycle.CancelRequested, cmd: completeCmd},
		{name: "ack_cancel", from: lifecycle.CancelRequested, cmd: func(l string) lifecycle.Command { return ownerCmd(lifecycle.OpAckCancel, l) }},
		{name: "halt", from: lifecycle.Running, cmd: func(l string) lifecycle.Command { return ownerCmd(lifecycle.OpHalt, l) }},
		{name: "fail to retrying", from: lifecycle.Running, cmd: func(l string) lifecycle.Command {
			return failCmd(l, "network", lifecycle.ClassTransient)
		}},
		{name: "fail to failed", from: lifecycle.Running, cmd: func(l string) lifecycle.Command {
			return failCmd(l, "compile_error", lifecycle.ClassPermanent)
		}},
		{name: "fail to dead_lettered", from: lifecycle.Running, spec: oneAttempt, cmd: func(l string) lifecycle.Command {
			return failCmd(l, "network", lifecycle.ClassTransient)
		}},
		{name: "fail to timed_out", from: lifecycle.Running, spec: oneAttempt, cmd: func(l string) lifecycle.Command {
			return failCmd(l, "timeout", lifecycle.ClassTimeout)
		}},
		{name: "release (owner stall)", from: lifecycle.Running, cmd: func(l string) lifecycle.Command { return ownerCmd(lifecycle.OpStall, l) }},
		{name: "owner dead_letter", from: lifecycle.Running, cmd: func(l string) lifecycle.Command { return ownerOpCmd(lifecycle.OpDeadLetter, l) }},
		{name: "soft cancel of a running job", from: lifecycle.Running, cmd: func(string) lifecycle.Command { return clientCmd(lifecycle.OpCancel) }},
		{name: "soft cancel of a queued job", from: lifecycle.Queued, cmd: func(string) lifecycle.Command { return clientCmd(lifecycle.OpCancel) }},
		{name: "hard cancel", from: lifecycle.Running, cmd: func(string) lifecycle.Command { return clientCmd(lifecycle.OpCancelHard) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			if tc.spec != nil {
				tc.spec(&spec)
			}
			w := reach(t, spec, tc.from)
			cmd := tc.cmd(w.job.LeaseID)
			w.must(t, cmd)
			afters := []time.Duration{time.Second, 2 * time.Hour}
			if w.job.State.Leased() {
				afters = afters[:1] // once the live lease expires, even a repeat is stale
			}
			for _, after := range afters {
				st, err := applyPure(t, w.job, cmd, w.now.Add(after))
				if err != nil || !st.Noop() {
					t.Fatalf("repeat %s after %s: noop=%v err=%v, want a no-op", cmd.Op, after, st.Noop(), err)
				}
				if !reflect.DeepEqual(st.Job, w.job) {
					t.Errorf("the no-op changed the job:\n got %+v\nwant %+v", st.Job, w.job)
				}
			}
		})
	}
}

// TestIdempotentCancelOfCancelled: a cancel of any kind on a cancelled job,
// and a soft cancel on one already cancelling, changes nothing.
func TestIdempotentCancelOfCancelled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		from lifecycle.State
		op   lifecycle.Op
	}{
		{"soft cancel on cancel_requested", lifecycle.CancelRequested, lifecycle.OpCancel},
		{"soft cancel on cancelled", lifecycle.Cancelled, lifecycle.OpCancel},
		{"hard cancel on cancelled", lifecycle.Cancelled, lifecycle.OpCancelHard},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := reach(t, baseSpec(), tc.from)
			st, err := applyPure(t, w.job, clientCmd(tc.op), w.now.Add(time.Minute))
			if err != nil || !st.Noop() || !reflect.DeepEqual(st.Job, w.job) {
				t.Fatalf("noop=%v err=%v, want a no-op returning the job unchanged", st.Noop(), err)
			}
		})
	}
	t.Run("hard cancel on cancel_requested is a real step", func(t *testing.T) {
		t.Parallel()
		w := reach(t, baseSpec(), lifecycle.CancelRequested)
		if ev := w.must(t, clientCmd(lifecycle.OpCancelHard)); ev.ToState != lifecycle.Cancelled {
			t.Fatalf("to = %s, want cancelled", ev.ToState)
		}
	})
}

// TestRepeatWithAnotherLeaseIsStale: only the lease that made the transition
// may repeat it.
func TestRepeatWithAnotherLeaseIsStale(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		build func(t *testing.T) (w *world, stale string)
	}{
		{"a made-up lease", func(t *testing.T) (*world, string) {
			w := reach(t, baseSpec(), lifecycle.Succeeded)
			return w, "lease-forged"
		}},
		{"the lease of an earlier attempt", func(t *testing.T) (*world, string) {
			w := reach(t, baseSpec(), lifecycle.Running)
			first := w.job.LeaseID
			w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
			w.must(t, systemCmd(lifecycle.OpRequeue))
			w.claim(t)
			w.must(t, ownerCmd(lifecycle.OpStart, w.job.LeaseID))
			w.must(t, completeCmd(w.job.LeaseID))
			return w, first
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, stale := tc.build(t)
			if w.job.State != lifecycle.Succeeded {
				t.Fatalf("fixture is %s, want succeeded", w.job.State)
			}
			st, err := applyPure(t, w.job, completeCmd(stale), w.now.Add(time.Second))
			if !errors.Is(err, lifecycle.ErrStaleLease) {
				t.Fatalf("complete with lease %q on a job completed under %q: noop=%v err=%v, want ErrStaleLease",
					stale, w.job.LastLeaseID, st.Noop(), err)
			}
		})
	}
}
