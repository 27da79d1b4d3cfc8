package storetest

import (
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testClaimRetry (issue 13, item 3): a claim repeated with its request id
// (its reply was lost) returns the jobs the first call leased that are still
// held under those leases, started when asked, and claims nothing new; the
// claimed events carry the request id.
func testClaimRetry(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	queue := h.name("q")
	var specs []lifecycle.Spec
	for range 4 {
		specs = append(specs, lifecycle.Spec{Kind: "k", Queue: queue})
	}
	if _, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: specs, Now: h.tick()}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	claim := func(worker, rid string, start bool) ([]store.Job, error) {
		return h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: worker, Queues: []string{queue}, Limit: 2,
			LeaseTTL: leaseTTL, Start: start, RequestID: rid, Now: h.tick()})
	}
	first, err := claim("w1", "claim-1", false)
	if err != nil || len(first) != 2 {
		t.Fatalf("claim: %d jobs, %v; want 2", len(first), err)
	}
	for _, j := range first {
		s := h.snap(j.ID)
		if ev := s.Events[len(s.Events)-1]; ev.Type != lifecycle.EventClaimed || ev.RequestID != "claim-1" {
			t.Errorf("job %s: last event %s with request id %q; want claimed with claim-1", j.ID, ev.Type, ev.RequestID)
		}
	}
	count := h.census()

	// The same request again, now asking for a start: the same leases, started.
	again, err := claim("w1", "claim-1", true)
	if err != nil || len(again) != 2 {
		t.Fatalf("the retried claim: %d jobs, %v; want the 2 of the first", len(again), err)
	}
	for i, j := range again {
		if j.ID != first[i].ID || j.LeaseID != first[i].LeaseID || j.State != lifecycle.Running {
			t.Errorf("retried claim returned %s (lease %s, %s); want %s (lease %s) running", j.ID, j.LeaseID, j.State, first[i].ID, first[i].LeaseID)
		}
		if !sameJob(j, h.get(j.ID)) {
			t.Errorf("retried claim returned %s, the store holds %s", asJSON(j), asJSON(h.get(j.ID)))
		}
	}
	after := h.census()
	if after.Jobs != count.Jobs || after.Events != count.Events+2 {
		t.Errorf("the retried claim wrote %d events (want the 2 starts) and went from %d to %d jobs", after.Events-count.Events, count.Jobs, after.Jobs)
	}
	if queued, err := h.s.JobList(h.ctx, &store.JobListParams{Queue: queue, States: []lifecycle.State{lifecycle.Queued}}); err != nil || len(queued) != 2 {
		t.Errorf("%d jobs still queued (%v); want 2: a retried claim claims nothing new", len(queued), err)
	}

	// A job whose lease ended since is no longer the claim's.
	done := fixture{ID: again[0].ID, Lease: again[0].LeaseID}
	h.complete(done)
	again, err = claim("w1", "claim-1", true)
	if err != nil || len(again) != 1 || again[0].ID != first[1].ID {
		t.Errorf("after one job completed: the retried claim returned %d jobs, %v; want only %s", len(again), err, first[1].ID)
	}

	// The request id is the worker's: another worker using it is refused.
	before := h.census()
	_, err = claim("w2", "claim-1", false)
	rejected(t, err, store.ErrRequestConflict)
	if c := h.census(); c != before {
		t.Errorf("a refused claim wrote: %+v → %+v", before, c)
	}

	// A new request id claims anew.
	fresh, err := claim("w1", "claim-2", true)
	if err != nil || len(fresh) != 2 {
		t.Errorf("a new request id: %d jobs, %v; want the 2 left", len(fresh), err)
	}
	h.census()
}
