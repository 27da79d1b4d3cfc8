package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testRetain checks retention: old terminal jobs go with their events and
// provenance, old heartbeat events go, and Verify stays clean after both.
func testRetain(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("finished_jobs", func(t *testing.T) { t.Parallel(); testRetainFinished(t, newStore) })
	t.Run("heartbeats", func(t *testing.T) { t.Parallel(); testRetainHeartbeats(t, newStore) })
	t.Run("trailing_heartbeats", func(t *testing.T) { t.Parallel(); testRetainTrailingHeartbeats(t, newStore) })
	t.Run("validation", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: h.now, Limit: store.MaxBatch + 1})
		rejected(t, err, store.ErrValidation)
	})
}

func testRetainFinished(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	var old []string
	for _, s := range terminalStates() {
		old = append(old, h.build(s).ID)
	}
	cutoff := h.now.Add(time.Minute)
	h.advance(2 * time.Minute)
	recent := h.build(lifecycle.Succeeded)
	live := h.build(lifecycle.Running)
	liveBefore := h.snap(live.ID)
	recentBefore := h.snap(recent.ID)
	oldEvents := 0
	for _, id := range old {
		oldEvents += len(h.snap(id).Events)
	}
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: cutoff})
	if err != nil {
		t.Fatalf("retain: %v", err)
	}
	if res.Jobs != len(old) || res.Events != oldEvents {
		t.Errorf("retain removed %d jobs and %d events, want %d and %d", res.Jobs, res.Events, len(old), oldEvents)
	}
	for _, id := range old {
		if _, err := h.s.JobGet(h.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("job %s finished before the cutoff: get says %v, want not found", id, err)
		}
		if _, err := h.s.JobProvenance(h.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("job %s finished before the cutoff: provenance says %v, want not found", id, err)
		}
	}
	h.unchanged(liveBefore)
	h.unchanged(recentBefore)
	if c := h.census(); c.Jobs != 2 {
		t.Errorf("%d jobs left, want the recent and the live one", c.Jobs)
	}
	if again, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: cutoff}); err != nil || again.Jobs != 0 {
		t.Errorf("a second pass removed %+v (err %v), want nothing", again, err)
	}
}

func testRetainHeartbeats(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	for range 5 {
		if _, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL}); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	cutoff := h.now.Add(time.Second)
	h.advance(time.Minute)
	if _, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL}); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	done := h.build(lifecycle.Succeeded)
	doneBefore := h.snap(done.ID)
	pruned := prunable(h.s, 5)
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{HeartbeatsBefore: cutoff})
	if err != nil || res.Heartbeats != pruned || res.Jobs != 0 {
		t.Fatalf("retain heartbeats: %+v, %v; want %d of the 5 old heartbeats pruned", res, err, pruned)
	}
	s := h.snap(f.ID)
	if len(s.Events) != int(s.Job.Rev)-pruned || s.Events[len(s.Events)-1].Type != lifecycle.EventHeartbeat {
		t.Errorf("after pruning: %d events for rev %d, want %d old heartbeats gone and the new one kept", len(s.Events), s.Job.Rev, pruned)
	}
	h.unchanged(doneBefore)
	h.census() // fails on any Verify finding: replay accepts the gaps
	h.complete(f)
	h.census()
}

// testRetainTrailingHeartbeats: retention may delete a running job's last
// events when they are heartbeats; Verify stays clean (the row was written
// after its last remaining event), and the job completes.
func testRetainTrailingHeartbeats(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Running)
	for range 3 {
		if _, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL}); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{HeartbeatsBefore: h.now.Add(time.Second)})
	if want := prunable(h.s, 3); err != nil || res.Heartbeats != want {
		t.Fatalf("retain heartbeats: %+v, %v; want %d of 3 pruned", res, err, want)
	}
	h.census() // fails on any Verify finding
	h.complete(f)
	h.census()
}

// prunable is how many of n old heartbeat events a retention pass deletes:
// all of them where history is deleted by rows, none where it lives in
// time partitions that go whole (store.PrunesHeartbeats).
func prunable(s store.Store, n int) int {
	if store.PrunesHeartbeats(s) {
		return n
	}
	return 0
}
