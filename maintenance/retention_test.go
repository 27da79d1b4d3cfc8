package maintenance

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Retention deletes terminal jobs older than Retention with their events and
// provenance, prunes heartbeats older than HeartbeatRetention, keeps the
// rest, and store.Verify stays clean, also after the pruned job goes on.
func TestRetention(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		var old []string
		for range 5 {
			old = append(old, d.run(true).ID)
		}
		long := d.run(false) // still running, with old heartbeats
		for range 3 {
			d.clock.Advance(time.Minute)
			d.heartbeat(long)
		}
		d.clock.Advance(8 * 24 * time.Hour)
		recent := d.run(true)
		d.heartbeat(long)

		r := must(NewRetention(d.s, &RetentionConfig{Clock: d.clock, Logger: d.logger(), Limit: 2}))
		passes := watch(r.l)
		start(t, r)
		heartbeats := 3 // where history goes by rows; with time partitions, whole partitions go
		if !store.PrunesHeartbeats(d.s) {
			heartbeats = 0
		}
		if n := nextPass(t, passes); n != 5+heartbeats {
			t.Fatalf("pass deleted %d jobs and heartbeats, want 5 jobs and %d heartbeats", n, heartbeats)
		}
		for _, id := range old {
			if _, err := d.s.JobGet(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("old job %s: %v, want not found", id, err)
			}
			if _, err := d.s.JobProvenance(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("provenance of old job %s: %v, want not found", id, err)
			}
		}
		d.wantState(recent.ID, lifecycle.Succeeded, "")
		want := []lifecycle.EventType{lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted}
		for range 1 + 3 - heartbeats {
			want = append(want, lifecycle.EventHeartbeat)
		}
		d.wantEvents(long.ID, want...)
		d.verify()

		// The pruned job goes on and finishes; its replay skips the gap.
		d.heartbeat(long)
		d.complete(long)
		d.verify()

		// The next pass, a minute later, finds nothing old enough.
		d.clock.Advance(time.Minute)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("second pass deleted %d rows, want 0", n)
		}
		d.wantState(recent.ID, lifecycle.Succeeded, "")
		d.verify()
	})
}

// Negative retentions keep everything forever.
func TestRetentionKeepsForever(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		done := d.run(true)
		long := d.run(false)
		d.heartbeat(long)
		d.clock.Advance(365 * 24 * time.Hour)
		r := must(NewRetention(d.s, &RetentionConfig{Clock: d.clock, Logger: d.logger(), Retention: -1, HeartbeatRetention: -1}))
		passes := watch(r.l)
		start(t, r)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("pass deleted %d rows, want 0", n)
		}
		d.wantState(done.ID, lifecycle.Succeeded, "")
		d.wantEvents(long.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventHeartbeat)
		d.verify()
	})
}

// run enqueues, claims and starts a job with a month-long lease, and
// completes it when finish is set.
func (d *db) run(finish bool) lifecycle.Job {
	d.t.Helper()
	d.enqueue(lifecycle.Spec{})
	j := d.claim(30*24*time.Hour, true)
	if finish {
		d.complete(j)
	}
	return j
}

func (d *db) heartbeat(j lifecycle.Job) {
	d.t.Helper()
	if _, err := d.s.JobHeartbeat(d.t.Context(), &store.JobHeartbeatParams{
		OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: d.now()}, LeaseTTL: 30 * 24 * time.Hour,
	}); err != nil {
		d.t.Fatalf("heartbeat: %v", err)
	}
}

func (d *db) complete(j lifecycle.Job) {
	d.t.Helper()
	res, err := d.s.JobComplete(d.t.Context(), []store.JobCompleteParams{{
		OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: d.now()},
	}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		d.t.Fatalf("complete: %v", err)
	}
}
