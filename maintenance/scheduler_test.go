package maintenance

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func newTestScheduler(d *db, cfg SchedulerConfig) (*Scheduler, <-chan passResult) {
	cfg.Clock, cfg.Logger = d.clock, d.logger()
	sc := must(NewScheduler(d.s, &cfg))
	sc.now = d.nowFor()
	return sc, watch(sc.l)
}

// The scheduler promotes a scheduled job and a retrying one when their
// run_at comes, woken by its timer.
func TestSchedulerPromotesDueJobs(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		runAt := d.clock.Now().Add(time.Hour)
		scheduled := d.enqueue(lifecycle.Spec{RunAt: &runAt})
		retrying := d.enqueue(lifecycle.Spec{})
		c := d.claim(time.Hour, true)
		if _, err := d.s.JobFail(t.Context(), &store.JobFailParams{
			OwnerParams: store.OwnerParams{JobID: c.ID, LeaseID: c.LeaseID, Now: d.now()},
			Error:       lifecycle.JobError{Code: "boom", Message: "transient"},
			RetryAt:     &runAt,
		}); err != nil {
			t.Fatalf("fail: %v", err)
		}
		sc, passes := newTestScheduler(d, SchedulerConfig{})
		start(t, sc)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("first pass promoted %d jobs before they were due", n)
		}
		d.wantState(scheduled.ID, lifecycle.Scheduled, "")
		d.wantState(retrying.ID, lifecycle.Retrying, "")

		d.clock.Advance(time.Hour)
		if n := nextPass(t, passes); n != 2 {
			t.Fatalf("pass promoted %d jobs, want 2", n)
		}
		d.wantState(scheduled.ID, lifecycle.Queued, "")
		d.wantState(retrying.ID, lifecycle.Queued, "")
		d.wantEvents(scheduled.ID, lifecycle.EventEnqueued, lifecycle.EventPromoted)
		d.wantEvents(retrying.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
			lifecycle.EventRetryScheduled, lifecycle.EventPromoted)
		d.verify()
	})
}

// Wake makes a pass at once, long before the next timer.
func TestSchedulerWake(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		runAt := d.clock.Now().Add(time.Minute)
		j := d.enqueue(lifecycle.Spec{RunAt: &runAt})
		sc, passes := newTestScheduler(d, SchedulerConfig{Interval: 24 * time.Hour})
		start(t, sc)
		nextPass(t, passes)
		d.clock.Advance(time.Minute) // the timer is a day away
		sc.Wake()
		if n := nextPass(t, passes); n != 1 {
			t.Fatalf("woken pass promoted %d jobs, want 1", n)
		}
		d.wantState(j.ID, lifecycle.Queued, "")
		d.verify()
	})
}

// One pass drains a backlog larger than Limit, calling the store until a
// call changes fewer than Limit jobs.
func TestSchedulerDrainsBacklogInOnePass(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		runAt := d.clock.Now().Add(time.Second)
		var ids []string
		for range 7 {
			ids = append(ids, d.enqueue(lifecycle.Spec{RunAt: &runAt}).ID)
		}
		sc, passes := newTestScheduler(d, SchedulerConfig{Limit: 2})
		start(t, sc)
		nextPass(t, passes)
		d.clock.Advance(time.Second)
		if n := nextPass(t, passes); n != 7 {
			t.Fatalf("pass promoted %d jobs, want all 7", n)
		}
		for _, id := range ids {
			d.wantState(id, lifecycle.Queued, "")
		}
		d.verify()
	})
}

// A stopped service starts again (the Maintainer does so each term it
// leads), and its first pass comes at once.
func TestSchedulerRestarts(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		sc, passes := newTestScheduler(d, SchedulerConfig{Interval: time.Hour})
		start(t, sc)
		nextPass(t, passes)
		sc.Stop()
		if sc.l.running() {
			t.Fatalf("running after Stop")
		}
		j := d.enqueue(lifecycle.Spec{RunAt: ptr(d.clock.Now().Add(time.Minute))})
		d.clock.Advance(time.Minute)
		start(t, sc)
		if n := nextPass(t, passes); n != 1 {
			t.Fatalf("first pass after restart promoted %d jobs, want 1", n)
		}
		d.wantState(j.ID, lifecycle.Queued, "")
		d.verify()
	})
}

func ptr[T any](v T) *T { return &v }
