package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestDeadWorker: a worker stops heartbeating in the middle of a job (its
// clock stands still, so its heartbeater never fires, as if the process
// hung). The reaper stalls and requeues the job once the lease expires,
// another worker finishes it, and when the first worker wakes up its
// completion is rejected as stale and changes nothing.
func TestDeadWorker(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.dead-worker"
		e.maintain()
		job := e.enqueue(stint.Spec{Kind: kind})

		hung := e.newGate(true)
		cfgA := e.poolConfig("worker-a")
		cfgA.Clock = clock.NewManual(e.now())      // never moves: no heartbeats
		cfgA.Queues = map[string]int{"default": 1} // its hung handler holds its only slot
		a := e.startPool(cfgA, kind, hung.work)
		fence := e.awaitStart(hung).Fence()

		var ranB int
		b := e.startPool(e.poolConfig("worker-b"), kind, func(context.Context, *stint.Job) error {
			ranB++
			return nil
		})
		j := e.untilState(job.ID, stint.Succeeded, e.step())
		if j.Attempt != 2 || j.LastOwner != b.WorkerID() || ranB != 1 {
			t.Errorf("job succeeded on attempt %d by %s (worker-b ran it %d times); want attempt 2 by %s, once",
				j.Attempt, j.LastOwner, ranB, b.WorkerID())
		}
		evs := e.wantTypes(job.ID,
			lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
			lifecycle.EventStalled, lifecycle.EventRequeued,
			lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventSucceeded)
		if st := lastEvent(evs, lifecycle.EventStalled); st.Actor != lifecycle.ActorSystem || st.Reason != lifecycle.ReasonLeaseExpired || st.LeaseID != fence.LeaseID {
			t.Errorf("stalled event %+v: want the system, reason lease_expired, the lease of worker-a", st)
		}

		// Worker A's handler returns at last: its completion is rejected.
		hung.open()
		e.until("worker-a's late completion to be rejected", 0, func() bool { return a.Stats().Stale >= 1 })
		if st := a.Stats(); st.Succeeded != 0 {
			t.Errorf("worker-a's stats %+v: a stale completion counted", st)
		}
		res, err := e.s.JobComplete(context.Background(), []store.JobCompleteParams{{
			OwnerParams: store.OwnerParams{JobID: fence.JobID, LeaseID: fence.LeaseID},
		}})
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, stint.ErrStaleLease) {
			t.Errorf("complete with worker-a's lease: %v, %+v; want ErrStaleLease", err, res)
		}
		if _, err := e.s.JobHeartbeat(context.Background(), &store.JobHeartbeatParams{
			OwnerParams: store.OwnerParams{JobID: fence.JobID, LeaseID: fence.LeaseID}, LeaseTTL: time.Minute,
		}); !errors.Is(err, stint.ErrStaleLease) {
			t.Errorf("heartbeat with worker-a's lease: %v, want ErrStaleLease", err)
		}
		if after := e.get(job.ID); after.Rev != j.Rev || after.State != stint.Succeeded {
			t.Errorf("the rejected reports changed the job: rev %d → %d, %s", j.Rev, after.Rev, after.State)
		}
	})
}
