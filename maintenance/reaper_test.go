package maintenance

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func newTestReaper(d *db) (*Reaper, <-chan passResult) {
	r := must(NewReaper(d.s, &ReaperConfig{Clock: d.clock, Logger: d.logger()}))
	r.now = d.nowFor()
	return r, watch(r.l)
}

const leaseTTL = 30 * time.Second

// The reaper's cases: each sets up a job, moves the clock, and expects one
// pass to change it as the table says.
func TestReaper(t *testing.T) {
	t.Parallel()
	E := func(ts ...lifecycle.EventType) []lifecycle.EventType { return ts }
	claimed := E(lifecycle.EventEnqueued, lifecycle.EventClaimed)
	started := E(lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted)
	tests := []struct {
		name    string
		setup   func(d *db) lifecycle.Job // returns the job as its owner last saw it
		advance time.Duration
		state   lifecycle.State
		reason  string
		events  []lifecycle.EventType
	}{{
		name:    "expired lease is stalled and requeued",
		setup:   func(d *db) lifecycle.Job { d.enqueue(lifecycle.Spec{}); return d.claim(leaseTTL, true) },
		advance: leaseTTL,
		state:   lifecycle.Queued,
		events:  append(started, lifecycle.EventStalled, lifecycle.EventRequeued),
	}, {
		name:    "expired lease with no attempts left is dead-lettered lease_expired",
		setup:   func(d *db) lifecycle.Job { d.enqueue(lifecycle.Spec{MaxAttempts: 1}); return d.claim(leaseTTL, false) },
		advance: leaseTTL + time.Second,
		state:   lifecycle.DeadLettered, reason: lifecycle.ReasonLeaseExpired,
		events: append(claimed, lifecycle.EventStalled, lifecycle.EventDeadLettered),
	}, {
		name: "cancel_requested with an expired lease is cancelled",
		setup: func(d *db) lifecycle.Job {
			d.enqueue(lifecycle.Spec{CancelGrace: time.Hour})
			j := d.claim(leaseTTL, true)
			softCancel(d, j.ID)
			return j
		},
		advance: leaseTTL,
		state:   lifecycle.Cancelled, reason: lifecycle.ReasonCancelDeadline,
		events: append(started, lifecycle.EventCancelRequested, lifecycle.EventCancelled),
	}, {
		name: "released job is requeued without waiting for its lease",
		setup: func(d *db) lifecycle.Job {
			d.enqueue(lifecycle.Spec{})
			j := d.claim(time.Hour, true)
			release(d, j)
			return j
		},
		state:  lifecycle.Queued,
		events: append(started, lifecycle.EventStalled, lifecycle.EventRequeued),
	}, {
		// A release is no failure: it never uses up the retry budget (issue 13).
		name: "released job on its last attempt is requeued, not dead-lettered",
		setup: func(d *db) lifecycle.Job {
			d.enqueue(lifecycle.Spec{MaxAttempts: 1})
			j := d.claim(time.Hour, true)
			release(d, j)
			return j
		},
		state:  lifecycle.Queued,
		events: append(started, lifecycle.EventStalled, lifecycle.EventRequeued),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			onBoth(t, func(t *testing.T, d *db) {
				owned := tc.setup(d)
				before := d.get(owned.ID)
				r, passes := newTestReaper(d)
				start(t, r)
				if tc.advance > 0 {
					if n := nextPass(t, passes); n != 0 {
						t.Fatalf("first pass changed %d jobs before their lease expired", n)
					}
					d.wantState(owned.ID, before.State, before.ReasonCode)
					d.clock.Advance(tc.advance)
				}
				if n := nextPass(t, passes); n == 0 {
					t.Fatalf("pass changed nothing")
				}
				j := d.wantState(owned.ID, tc.state, tc.reason)
				if j.Owner != "" || j.LeaseID != "" {
					t.Errorf("job still has owner %q lease %q", j.Owner, j.LeaseID)
				}
				d.wantEvents(owned.ID, tc.events...)
				lateComplete(t, d, owned)
				d.verify()
			})
		})
	}
}

// A lease that has not expired is left alone however often the reaper passes.
func TestReaperLeavesLiveLeases(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		d.enqueue(lifecycle.Spec{})
		j := d.claim(leaseTTL, true)
		r, passes := newTestReaper(d)
		start(t, r)
		nextPass(t, passes)
		for range 5 {
			d.clock.Advance(time.Second)
			if n := nextPass(t, passes); n != 0 {
				t.Fatalf("pass changed %d jobs with a live lease", n)
			}
		}
		d.wantState(j.ID, lifecycle.Running, "")
		d.verify()
	})
}

func softCancel(d *db, id string) {
	d.t.Helper()
	j, err := d.s.JobCancel(d.t.Context(), &store.JobCancelParams{JobID: id, Reason: "test", Now: d.now()})
	if err != nil || j.State != lifecycle.CancelRequested {
		d.t.Fatalf("soft cancel: %s, %v", j.State, err)
	}
}

func release(d *db, j lifecycle.Job) {
	d.t.Helper()
	if _, err := d.s.JobRelease(d.t.Context(), &store.JobReleaseParams{
		OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: d.now()},
	}); err != nil {
		d.t.Fatalf("release: %v", err)
	}
}

// lateComplete checks that the old owner's complete, arriving after the
// service took the job from it, is rejected as stale and changes nothing.
func lateComplete(t *testing.T, d *db, owned lifecycle.Job) {
	t.Helper()
	before := d.get(owned.ID)
	res, err := d.s.JobComplete(t.Context(), []store.JobCompleteParams{{
		OwnerParams: store.OwnerParams{JobID: owned.ID, LeaseID: owned.LeaseID, Now: d.now()},
	}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if !errors.Is(err, store.ErrStaleLease) && !errors.Is(err, store.ErrInvalidTransition) {
		t.Errorf("late complete by the old owner: %v, want a stale lease or invalid transition", err)
	}
	if after := d.get(owned.ID); after.Rev != before.Rev {
		t.Errorf("late complete changed the job: rev %d → %d", before.Rev, after.Rev)
	}
}
