package storetest

import (
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testVerify: Verify on a clean database, empty and full, reports no
// findings and counts every job and event.
func testVerify(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		rep, err := h.s.Verify(h.ctx, nil)
		if err != nil || rep.Jobs != 0 || rep.Events != 0 || len(rep.Findings) != 0 {
			t.Fatalf("verify of an empty store: %+v, %v", rep, err)
		}
	})
	t.Run("every_state", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		jobs, events := 0, 0
		for _, s := range lifecycle.States {
			for range 3 {
				events += int(h.get(h.build(s).ID).Rev)
				jobs++
				if s == lifecycle.Blocked { // and its run's upstream, enqueued scheduled: one event
					jobs, events = jobs+1, events+1
				}
			}
		}
		var found []store.Finding
		rep, err := h.s.Verify(h.ctx, &store.VerifyParams{OnFinding: func(f store.Finding) { found = append(found, f) }})
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if rep.Jobs != jobs || rep.Events != events || len(rep.Findings) != 0 || len(found) != 0 {
			t.Errorf("verify: %d jobs, %d events, findings %v (callback %v); want %d jobs, %d events, none",
				rep.Jobs, rep.Events, rep.Findings, found, jobs, events)
		}
	})
}
