package maintenance

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// A soft cancel the owner never acknowledges is cancelled at its deadline,
// and the owner's late acknowledgement and completion change nothing.
func TestCancelFinalizer(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		d.enqueue(lifecycle.Spec{CancelGrace: 30 * time.Second})
		j := d.claim(time.Hour, true)
		softCancel(d, j.ID)
		f := must(NewCancelFinalizer(d.s, &CancelFinalizerConfig{Clock: d.clock, Logger: d.logger()}))
		f.now = d.nowFor()
		passes := watch(f.l)
		start(t, f)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("first pass cancelled %d jobs before their cancel deadline", n)
		}
		d.clock.Advance(29 * time.Second)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("pass cancelled %d jobs before their cancel deadline", n)
		}
		d.wantState(j.ID, lifecycle.CancelRequested, lifecycle.ReasonCancelled)
		d.clock.Advance(time.Second)
		if n := nextPass(t, passes); n != 1 {
			t.Fatalf("pass cancelled %d jobs, want 1", n)
		}
		d.wantState(j.ID, lifecycle.Cancelled, lifecycle.ReasonCancelDeadline)
		d.wantEvents(j.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
			lifecycle.EventCancelRequested, lifecycle.EventCancelled)
		// A late acknowledgement finds the job already cancelled: the
		// lifecycle answers it as an idempotent no-op, which must change nothing.
		before := d.get(j.ID)
		if got, err := d.s.JobAckCancel(t.Context(), &store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: d.now()}); err == nil && got.Rev != before.Rev {
			t.Errorf("late acknowledgement changed the job: rev %d → %d", before.Rev, got.Rev)
		}
		lateComplete(t, d, j)
		d.verify()
	})
}
