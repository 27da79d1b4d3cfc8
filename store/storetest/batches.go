package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testBatches: the batched owner and claim ops a server uses for many
// remote workers at once (store.HeartbeatManyStore, store.ClaimManyStore)
// judge each item as its single op would, and answer each on its own.
func testBatches(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T) store.Store)
	}{
		{"heartbeat_many", testHeartbeatMany},
		{"heartbeat_many_repeated", testHeartbeatManyRepeated},
		{"claim_many_deals_in_turn", testClaimManyDeals},
		{"claim_many_retry", testClaimManyRetry},
		{"claim_many_refusals", testClaimManyRefusals},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore)
		})
	}
}

func heartbeatMany(t *testing.T, s store.Store) store.HeartbeatManyStore {
	t.Helper()
	hm, ok := store.As[store.HeartbeatManyStore](s)
	if !ok {
		t.Fatalf("the store (%T) has no JobHeartbeatMany", s)
	}
	return hm
}

func claimMany(t *testing.T, s store.Store) store.ClaimManyStore {
	t.Helper()
	cm, ok := store.As[store.ClaimManyStore](s)
	if !ok {
		t.Fatalf("the store (%T) has no JobClaimMany", s)
	}
	return cm
}

// testHeartbeatMany: a batch renews the leases it presents rightly, each
// with its own event, and refuses the others item by item (stale lease,
// missing job, a job no longer leased), changing nothing of them.
func testHeartbeatMany(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	a, b := h.build(lifecycle.Running), h.build(lifecycle.Claimed)
	stale := h.build(lifecycle.Running)
	ended := h.build(lifecycle.Succeeded)
	sa, sb, ss, se := h.snap(a.ID), h.snap(b.ID), h.snap(stale.ID), h.snap(ended.ID)
	at := h.tick()
	item := func(f fixture, lease, req string) store.JobHeartbeatParams {
		return store.JobHeartbeatParams{OwnerParams: store.OwnerParams{JobID: f.ID, LeaseID: lease, RequestID: req, Now: at},
			LeaseTTL: 2 * leaseTTL, Progress: json.RawMessage(`{"done":1}`)}
	}
	res, err := heartbeatMany(t, h.s).JobHeartbeatMany(h.ctx, []store.JobHeartbeatParams{
		item(a, a.Lease, "ra"), item(stale, "not-the-lease", "rs"), item(b, b.Lease, "rb"),
		item(fixture{ID: "no-such-job"}, "x", "rn"), item(ended, ended.Lease, "re"),
	})
	if err != nil || len(res) != 5 {
		t.Fatalf("JobHeartbeatMany: %d results, %v", len(res), err)
	}
	for i, s := range []snapshot{sa, sb} {
		r := res[2*i]
		want := at.Add(2 * leaseTTL)
		if r.Err != nil || r.Job.Rev != s.Job.Rev+1 || r.Job.LeaseExpiresAt == nil || !r.Job.LeaseExpiresAt.Equal(want) || r.Job.State != s.Job.State {
			t.Errorf("item %d: %v, %s; want %s renewed to %s at rev %d", 2*i, r.Err, asJSON(r.Job), s.Job.State, want, s.Job.Rev+1)
		}
		if got := h.get(s.Job.ID); !sameJob(got, r.Job) {
			t.Errorf("item %d answered %s but the store holds %s", 2*i, asJSON(r.Job), asJSON(got))
		}
		evs, err := h.s.JobEvents(h.ctx, s.Job.ID)
		if err != nil || len(evs) != len(s.Events)+1 || evs[len(evs)-1].Type != lifecycle.EventHeartbeat {
			t.Errorf("item %d: events %v, %v; want one heartbeat more", 2*i, evs, err)
		}
	}
	rejected(t, res[1].Err, store.ErrStaleLease)
	rejected(t, res[3].Err, store.ErrNotFound)
	if res[4].Err == nil {
		t.Errorf("a heartbeat of a succeeded job was accepted: %s", asJSON(res[4].Job))
	}
	h.unchanged(ss)
	h.unchanged(se)
	verifyClean(t, h)
}

// testHeartbeatManyRepeated: a batch sent again with the same request ids
// changes nothing and answers each renewed item with its job as it is; the
// same item twice in one batch is one heartbeat; an empty batch is nothing.
func testHeartbeatManyRepeated(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	hm := heartbeatMany(t, h.s)
	a, b := h.build(lifecycle.Running), h.build(lifecycle.Running)
	batch := func() []store.JobHeartbeatParams {
		at := h.tick()
		return []store.JobHeartbeatParams{
			{OwnerParams: store.OwnerParams{JobID: a.ID, LeaseID: a.Lease, RequestID: "ra", Now: at}, LeaseTTL: leaseTTL},
			{OwnerParams: store.OwnerParams{JobID: b.ID, LeaseID: b.Lease, RequestID: "rb", Now: at}, LeaseTTL: leaseTTL},
			{OwnerParams: store.OwnerParams{JobID: a.ID, LeaseID: a.Lease, RequestID: "ra", Now: at}, LeaseTTL: leaseTTL},
		}
	}
	res, err := hm.JobHeartbeatMany(h.ctx, batch())
	if err != nil || len(res) != 3 || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("first batch: %+v, %v", res, err)
	}
	if !sameJob(res[0].Job, res[2].Job) {
		t.Errorf("the repeated item got %s, want the first's %s", asJSON(res[2].Job), asJSON(res[0].Job))
	}
	sa, sb := h.snap(a.ID), h.snap(b.ID)
	if sa.Job.Rev != res[0].Job.Rev {
		t.Errorf("job a is at rev %d after one batch, want %d (one heartbeat)", sa.Job.Rev, res[0].Job.Rev)
	}
	res, err = hm.JobHeartbeatMany(h.ctx, batch())
	if err != nil || len(res) != 3 {
		t.Fatalf("repeated batch: %+v, %v", res, err)
	}
	for i, s := range []snapshot{sa, sb, sa} {
		if res[i].Err != nil || !sameJob(res[i].Job, s.Job) {
			t.Errorf("repeated item %d: %v, %s; want the record as it is, %s", i, res[i].Err, asJSON(res[i].Job), asJSON(s.Job))
		}
	}
	h.unchanged(sa)
	h.unchanged(sb)
	if res, err := hm.JobHeartbeatMany(h.ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("empty batch: %+v, %v", res, err)
	}
	verifyClean(t, h)
}

// enqueueIn puts n jobs in one queue, one second apart (so their claim
// order is their order), and returns their ids.
func (h *harness) enqueueIn(queue string, n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	for i := range n {
		at := h.tick()
		res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "storetest", Queue: queue}}, Now: at})
		h.ok("enqueue", err)
		ids[i] = res[0].Job.ID
	}
	return ids
}

// testClaimManyDeals: one call leases jobs to several workers, dealt in
// claim order one at a time in turn, each job leased to its worker (its
// owner, its own lease, one claimed event by that worker), started for
// the claim that asks for it; limits are kept.
func testClaimManyDeals(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	q := h.name("q")
	ids := h.enqueueIn(q, 6)
	claim := func(worker string, limit int, start bool) store.JobClaimParams {
		return store.JobClaimParams{WorkerID: worker, Queues: []string{q}, Limit: limit, LeaseTTL: leaseTTL, Start: start, RequestID: "req-" + worker}
	}
	at := h.tick()
	ps := []store.JobClaimParams{claim("a", 2, false), claim("b", 1, true), claim("c", 3, false), claim("d", 2, false)}
	ps[0].Now = at
	res, err := claimMany(t, h.s).JobClaimMany(h.ctx, ps)
	if err != nil || len(res) != 4 {
		t.Fatalf("JobClaimMany: %+v, %v", res, err)
	}
	// Turns: a b c d, then a c d (b is full), and the sixth job is c's.
	want := map[string][]string{"a": {ids[0], ids[4]}, "b": {ids[1]}, "c": {ids[2], ids[5]}, "d": {ids[3]}}
	leases := map[string]bool{}
	for i, r := range res {
		w := ps[i].WorkerID
		if r.Err != nil || fmt.Sprint(jobIDs(r.Jobs)) != fmt.Sprint(want[w]) {
			t.Fatalf("claim of %s got %v, %v; want %v", w, jobIDs(r.Jobs), r.Err, want[w])
		}
		for _, j := range r.Jobs {
			state := lifecycle.Claimed
			if ps[i].Start {
				state = lifecycle.Running
			}
			got := h.get(j.ID)
			if !sameJob(got, j) || j.Owner != w || j.State != state || j.Attempt != 1 || leases[j.LeaseID] || !j.LeaseExpiresAt.Equal(at.Add(leaseTTL)) {
				t.Errorf("job %s for %s: answered %s, stored %s; want it %s, owned by %s on a lease of its own", j.ID, w, asJSON(j), asJSON(got), state, w)
			}
			leases[j.LeaseID] = true
			evs, err := h.s.JobEvents(h.ctx, j.ID)
			h.ok("events", err)
			claimed := 0
			for _, ev := range evs {
				if ev.Type == lifecycle.EventClaimed {
					claimed++
					if ev.ActorID != w || ev.RequestID != ps[i].RequestID || ev.LeaseID != j.LeaseID {
						t.Errorf("job %s's claimed event: actor %q request %q lease %q; want %q, %q, %q", j.ID, ev.ActorID, ev.RequestID, ev.LeaseID, w, ps[i].RequestID, j.LeaseID)
					}
				}
			}
			if claimed != 1 {
				t.Errorf("job %s has %d claimed events, want 1", j.ID, claimed)
			}
		}
	}
	// Nothing left: a second call gets nothing, and says so to each claim.
	ps2 := []store.JobClaimParams{claim("e", 1, false), claim("f", 1, false)}
	res, err = claimMany(t, h.s).JobClaimMany(h.ctx, ps2)
	if err != nil || len(res) != 2 || len(res[0].Jobs)+len(res[1].Jobs) != 0 {
		t.Fatalf("claim of an empty queue: %+v, %v", res, err)
	}
	verifyClean(t, h)
}

func jobIDs(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// testClaimManyRetry: a claim whose request id leased jobs before (a
// retry after a lost reply) gets those jobs again and no new one, in a
// batch where the other claims lease new jobs.
func testClaimManyRetry(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	cm := claimMany(t, h.s)
	q := h.name("q")
	ids := h.enqueueIn(q, 4)
	claim := func(worker, req string) store.JobClaimParams {
		return store.JobClaimParams{WorkerID: worker, Queues: []string{q}, Limit: 1, LeaseTTL: leaseTTL, RequestID: req, Now: h.tick()}
	}
	first, err := cm.JobClaimMany(h.ctx, []store.JobClaimParams{claim("a", "ra"), claim("b", "rb")})
	if err != nil || len(first) != 2 || len(first[0].Jobs) != 1 || len(first[1].Jobs) != 1 {
		t.Fatalf("first call: %+v, %v", first, err)
	}
	sa := h.snap(first[0].Jobs[0].ID)
	again, err := cm.JobClaimMany(h.ctx, []store.JobClaimParams{claim("c", "rc"), claim("a", "ra")})
	if err != nil || len(again) != 2 {
		t.Fatalf("second call: %+v, %v", again, err)
	}
	if len(again[1].Jobs) != 1 || !sameJob(again[1].Jobs[0], sa.Job) {
		t.Errorf("the retried claim got %v, want its job %s as it is", jobIDs(again[1].Jobs), sa.Job.ID)
	}
	h.unchanged(sa)
	if len(again[0].Jobs) != 1 || again[0].Jobs[0].ID != ids[2] {
		t.Errorf("the new claim got %v, want %s", jobIDs(again[0].Jobs), ids[2])
	}
	h.must(ids[3], lifecycle.Queued)
	verifyClean(t, h)
}

// testClaimManyRefusals: claims of different jobs in one call, an invalid
// claim, or one request id twice are refused whole with nothing leased; a
// claim whose request id is another worker's is refused alone.
func testClaimManyRefusals(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	cm := claimMany(t, h.s)
	q, other := h.name("q"), h.name("q")
	ids := h.enqueueIn(q, 3)
	claim := func(worker, queue, req string) store.JobClaimParams {
		return store.JobClaimParams{WorkerID: worker, Queues: []string{queue}, Limit: 1, LeaseTTL: leaseTTL, RequestID: req, Now: h.tick()}
	}
	before := h.snap(ids[0])
	bad := claim("b", q, "")
	bad.LeaseTTL = 0
	for name, ps := range map[string][]store.JobClaimParams{
		"none":            nil,
		"other queues":    {claim("a", q, ""), claim("b", other, "")},
		"no lease":        {claim("a", q, ""), bad},
		"one request id":  {claim("a", q, "r"), claim("b", q, "r")},
		"too many claims": make([]store.JobClaimParams, store.MaxClaimsPerCall+1),
	} {
		res, err := cm.JobClaimMany(h.ctx, ps)
		rejected(t, err, store.ErrValidation)
		if res != nil {
			t.Errorf("%s: got %+v with the error", name, res)
		}
	}
	h.unchanged(before)
	first, err := cm.JobClaimMany(h.ctx, []store.JobClaimParams{claim("a", q, "ra")})
	if err != nil || len(first[0].Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", first, err)
	}
	res, err := cm.JobClaimMany(h.ctx, []store.JobClaimParams{claim("thief", q, "ra"), claim("c", q, "rc")})
	if err != nil || len(res) != 2 {
		t.Fatalf("a batch with a request id of another worker: %+v, %v", res, err)
	}
	rejected(t, res[0].Err, store.ErrRequestConflict)
	if len(res[0].Jobs) != 0 || len(res[1].Jobs) != 1 || res[1].Jobs[0].ID != ids[1] {
		t.Errorf("got %v and %v; want nothing for the refused claim and %s for the other", jobIDs(res[0].Jobs), jobIDs(res[1].Jobs), ids[1])
	}
	h.must(ids[2], lifecycle.Queued)
	verifyClean(t, h)
}
