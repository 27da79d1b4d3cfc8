package storetest

import (
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testRepeatCompleteBatch: a completion batch whose request ids were all
// used (the same batch sent again) changes nothing and answers each item
// with its job as it is; in a batch, an item whose request id was used for
// another op on its job is refused alone, the others complete. A driver
// that checks a batch's request ids in one statement (store.RequestLookup)
// answers exactly as one that checks them one by one.
func testRepeatCompleteBatch(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	a, b := h.build(lifecycle.Running), h.build(lifecycle.Running)
	h.requestID = "used-by-enqueue"
	c := h.build(lifecycle.Running)
	h.requestID = ""
	d := h.build(lifecycle.Running)
	item := func(f fixture, req string) store.JobCompleteParams {
		return store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, RequestID: req, Now: h.tick()}}
	}
	first := []store.JobCompleteParams{item(a, "ra"), item(b, "rb")}
	res, err := h.s.JobComplete(h.ctx, first)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("first batch: %+v, %v", res, err)
	}
	sa, sb := h.snap(a.ID), h.snap(b.ID)
	res, err = h.s.JobComplete(h.ctx, first)
	if err != nil || len(res) != 2 {
		t.Fatalf("repeated batch: %+v, %v", res, err)
	}
	for i, s := range []snapshot{sa, sb} {
		if res[i].Err != nil || !sameJob(res[i].Job, s.Job) {
			t.Errorf("repeated batch item %d: %v, %s; want the record as it is, %s", i, res[i].Err, asJSON(res[i].Job), asJSON(s.Job))
		}
	}
	h.unchanged(sa)
	h.unchanged(sb)
	sc := h.snap(c.ID)
	res, err = h.s.JobComplete(h.ctx, []store.JobCompleteParams{item(c, "used-by-enqueue"), item(d, "rd")})
	if err != nil || len(res) != 2 {
		t.Fatalf("mixed batch: %+v, %v", res, err)
	}
	rejected(t, res[0].Err, store.ErrRequestConflict)
	h.unchanged(sc)
	if res[1].Err != nil || res[1].Job.State != lifecycle.Succeeded {
		t.Errorf("the other item of the mixed batch: %v, state %s; want succeeded", res[1].Err, res[1].Job.State)
	}
}
