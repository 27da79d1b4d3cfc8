package storetest

import (
	"errors"
	"testing"

	"github.com/stint-dev/stint/store"
)

// testScheduleTick checks that ScheduleTickJobID names the job a tick
// enqueued, which the dashboard reads as a schedule's last job.
func testScheduleTick(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	ss, err := store.Schedules(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store keeps no schedules")
	}
	h.ok("schedules", err)
	s, err := ss.SchedulePut(h.ctx, store.Schedule{Name: "nightly", Expr: "@hourly", Kind: "report", Tenant: "acme", Queue: "acme/reports"})
	h.ok("put", err)
	tick := h.now.Add(0)
	res, fired, err := ss.ScheduleFire(h.ctx, &store.ScheduleFireParams{Name: s.Name, Tick: tick, Enqueue: true, Now: h.tick()})
	h.ok("fire", err)
	if !fired || res.Job.ID == "" {
		t.Fatalf("the tick fired %v, enqueued %+v", fired, res.Job)
	}
	if id := store.ScheduleTickJobID(s, tick); id != res.Job.ID {
		t.Errorf("ScheduleTickJobID: %s, want the tick's job %s", id, res.Job.ID)
	}
}
