package lifecycle_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// ownerOps are the operations an owner performs with its lease.
var ownerOps = []lifecycle.Op{
	lifecycle.OpStart, lifecycle.OpHeartbeat, lifecycle.OpCheckpoint, lifecycle.OpComplete,
	lifecycle.OpFail, lifecycle.OpHalt, lifecycle.OpStall, lifecycle.OpDeadLetter, lifecycle.OpAckCancel,
}

// ownerOpCmd is op by the owner presenting lease, with valid fields.
func ownerOpCmd(op lifecycle.Op, lease string) lifecycle.Command {
	switch op {
	case lifecycle.OpComplete:
		return completeCmd(lease)
	case lifecycle.OpFail:
		return failCmd(lease, "network", lifecycle.ClassTransient)
	case lifecycle.OpDeadLetter:
		c := deadLetterCmd(lifecycle.ActorOwner, lease)
		c.ActorID = worker
		return c
	}
	return ownerCmd(op, lease)
}

func wantStale(t *testing.T, err error, st lifecycle.Step, advice string) {
	t.Helper()
	if !errors.Is(err, lifecycle.ErrStaleLease) {
		t.Fatalf("err = %v (noop=%v), want ErrStaleLease", err, st.Noop())
	}
	if !strings.Contains(err.Error(), advice) {
		t.Errorf("error %q does not tell the owner %q", err, advice)
	}
	var le *lifecycle.Error
	if !errors.As(err, &le) || le.JobID != testJobID || le.Op == "" {
		t.Errorf("error %v does not name the job and the operation", err)
	}
}

// TestFencingWrongLease: an owner op on a leased job with another lease id.
func TestFencingWrongLease(t *testing.T) {
	t.Parallel()
	for _, from := range []lifecycle.State{lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested} {
		for _, op := range ownerOps {
			t.Run(string(from)+"/"+string(op), func(t *testing.T) {
				t.Parallel()
				w := reach(t, baseSpec(), from)
				st, err := applyPure(t, w.job, ownerOpCmd(op, "lease-of-someone-else"), w.now.Add(time.Second))
				wantStale(t, err, st, "stop working on this job")
			})
		}
	}
}

// TestFencingExpiredLease: the lease is judged by the now passed in; at
// lease_expires_at it is already stale.
func TestFencingExpiredLease(t *testing.T) {
	t.Parallel()
	for _, op := range ownerOps {
		for _, late := range []time.Duration{0, time.Nanosecond, time.Hour} {
			t.Run(string(op)+"/+"+late.String(), func(t *testing.T) {
				t.Parallel()
				w := reach(t, baseSpec(), lifecycle.Running)
				st, err := applyPure(t, w.job, ownerOpCmd(op, w.job.LeaseID), w.job.LeaseExpiresAt.Add(late))
				wantStale(t, err, st, "heartbeat more often than the lease TTL")
			})
		}
	}
	t.Run("a nanosecond before expiry is live", func(t *testing.T) {
		t.Parallel()
		w := reach(t, baseSpec(), lifecycle.Running)
		if _, err := applyPure(t, w.job, ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID), w.job.LeaseExpiresAt.Add(-time.Nanosecond)); err != nil {
			t.Fatalf("heartbeat before expiry: %v", err)
		}
	})
}

// TestFencingLostLease: after the lease is released, revoked or superseded,
// every owner op with the old lease is stale, except the owner repeating the
// very transition it made itself (TestIdempotentRepeats).
func TestFencingLostLease(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		lose func(t *testing.T, w *world)
		// ownOp is the op the owner itself performed to lose the lease, whose
		// repeat is an idempotent no-op rather than stale.
		ownOp lifecycle.Op
		spec  func(*lifecycle.Spec)
	}{
		{name: "released by its owner", ownOp: lifecycle.OpStall, lose: func(t *testing.T, w *world) {
			w.must(t, ownerCmd(lifecycle.OpStall, w.job.LeaseID))
		}},
		{name: "expired and stalled by the reaper", lose: func(t *testing.T, w *world) {
			w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
		}},
		{name: "revoked by a hard cancel", lose: func(t *testing.T, w *world) {
			w.must(t, clientCmd(lifecycle.OpCancelHard))
		}},
		{name: "revoked by force_cancel", lose: func(t *testing.T, w *world) {
			w.must(t, clientCmd(lifecycle.OpCancel))
			w.mustAt(t, *w.job.CancelDeadline, systemCmd(lifecycle.OpForceCancel))
		}},
		{name: "revoked by a system dead_letter", lose: func(t *testing.T, w *world) {
			w.must(t, deadLetterCmd(lifecycle.ActorSystem, ""))
		}},
		{name: "revoked by a system halt", lose: func(t *testing.T, w *world) {
			w.must(t, systemCmd(lifecycle.OpHalt))
		}},
		{name: "revoked by the attempt timeout", spec: withTimeout, lose: func(t *testing.T, w *world) {
			w.mustAt(t, *w.job.TimeoutAt, systemCmd(lifecycle.OpTimeOut))
		}},
		{name: "revoked by the deadline", spec: withDeadline, lose: func(t *testing.T, w *world) {
			c := systemCmd(lifecycle.OpTimeOut)
			c.Deadline = true
			w.mustAt(t, *w.job.Deadline, c)
		}},
		{name: "superseded by a new claim", lose: func(t *testing.T, w *world) {
			w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
			w.must(t, systemCmd(lifecycle.OpRequeue))
			w.claim(t)
			w.must(t, ownerCmd(lifecycle.OpStart, w.job.LeaseID))
		}},
	}
	for _, tc := range cases {
		for _, op := range ownerOps {
			if op == tc.ownOp {
				continue
			}
			t.Run(tc.name+"/"+string(op), func(t *testing.T) {
				t.Parallel()
				spec := baseSpec()
				if tc.spec != nil {
					tc.spec(&spec)
				}
				w := reach(t, spec, lifecycle.Running)
				old := w.job.LeaseID
				tc.lose(t, w)
				st, err := applyPure(t, w.job, ownerOpCmd(op, old), w.now.Add(time.Second))
				wantStale(t, err, st, "stop working on this job")
			})
		}
	}
}
