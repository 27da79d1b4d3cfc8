package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testDedupe checks dedupe keys: while a job with (tenant, dedupe_key) is
// live, enqueueing the key again returns it (Existing) and writes nothing;
// once it is terminal the key is free; tenants never collide (LI-5).
func testDedupe(t *testing.T, newStore func(*testing.T) store.Store) {
	// Not blocked: only a run's job is blocked, and a run's jobs carry no
	// dedupe key (the run names them).
	for _, live := range []lifecycle.State{
		lifecycle.Queued, lifecycle.Scheduled, lifecycle.Claimed, lifecycle.Running,
		lifecycle.CancelRequested, lifecycle.Stalled, lifecycle.Retrying,
	} {
		t.Run("live_"+string(live), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(live, dedupeKey("acme", "invoice-7"))
			before, count := h.snap(f.ID), h.census()
			res := h.enqueueKey("acme", "invoice-7")
			if !res.Existing || res.Job.ID != f.ID || !sameJob(res.Job, before.Job) {
				t.Fatalf("enqueue of a live key returned existing=%v %s, want the live job %s", res.Existing, asJSON(res.Job), asJSON(before.Job))
			}
			h.unchanged(before)
			if after := h.census(); after != count {
				t.Errorf("the store went from %+v to %+v", count, after)
			}
		})
	}
	for _, done := range []lifecycle.State{
		lifecycle.Succeeded, lifecycle.Failed, lifecycle.Cancelled, lifecycle.TimedOut,
		lifecycle.Halted, lifecycle.DeadLettered, lifecycle.Denied,
	} {
		t.Run("terminal_"+string(done), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(done, dedupeKey("acme", "invoice-7"))
			before := h.snap(f.ID)
			res := h.enqueueKey("acme", "invoice-7")
			if res.Existing || res.Job.ID == f.ID {
				t.Fatalf("enqueue after the key's job ended (%s) returned existing=%v job %s, want a new job", done, res.Existing, res.Job.ID)
			}
			h.unchanged(before)
			if again := h.enqueueKey("acme", "invoice-7"); !again.Existing || again.Job.ID != res.Job.ID {
				t.Errorf("the new job does not hold the key: got existing=%v %s, want %s", again.Existing, again.Job.ID, res.Job.ID)
			}
		})
	}
	t.Run("tenants_do_not_collide", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ids := map[string]bool{}
		for _, tenant := range []string{"", "acme", "globex"} {
			res := h.enqueueKey(tenant, "shared-key")
			if res.Existing {
				t.Errorf("tenant %q: the key of another tenant matched", tenant)
			}
			ids[res.Job.ID] = true
		}
		if len(ids) != 3 {
			t.Errorf("%d jobs for three tenants", len(ids))
		}
	})
	t.Run("same_key_within_one_batch", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		at := h.tick()
		a, b := h.spec(*at, dedupeKey("acme", "k")), h.spec(*at, dedupeKey("acme", "k"))
		res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{a, b}, Now: at})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		if res[0].Existing || !res[1].Existing || res[1].Job.ID != res[0].Job.ID {
			t.Fatalf("batch with one key twice: %+v, want the second to return the first", res)
		}
		if c := h.census(); c.Jobs != 1 {
			t.Errorf("%d jobs, want 1", c.Jobs)
		}
	})
	t.Run("denied_does_not_hold_the_key", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		d := h.build(lifecycle.Denied, dedupeKey("acme", "k"))
		if res := h.enqueueKey("acme", "k"); res.Existing || res.Job.ID == d.ID || res.Job.State != lifecycle.Queued {
			t.Fatalf("after a denied job: %+v, want a new queued job", res)
		}
	})
	t.Run("concurrent_enqueues_of_one_key", func(t *testing.T) { t.Parallel(); testConcurrentDedupe(t, newStore) })
}

// enqueueKey enqueues one job with (tenant, key) at the next tick.
func (h *harness) enqueueKey(tenant, key string) store.EnqueueResult {
	h.t.Helper()
	at := h.tick()
	res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{h.spec(*at, dedupeKey(tenant, key))}, Now: at})
	if err != nil || len(res) != 1 {
		h.t.Fatalf("enqueue (%q, %q): %d results, %v", tenant, key, len(res), err)
	}
	return res[0]
}

// testConcurrentDedupe: many producers enqueue one key at once; exactly one
// job exists and every producer gets it back (LI-5 under contention).
func testConcurrentDedupe(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	const producers = 16
	at := h.tick()
	ids := make([]string, producers)
	errs := make([]error, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := lifecycle.Spec{Kind: "storetest", Queue: fmt.Sprintf("p%d", i), Tenant: "acme", DedupeKey: "once"}
			res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, Now: at})
			if err == nil {
				ids[i] = res[0].Job.ID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("producer %d: %v", i, err)
		}
		if ids[i] != ids[0] {
			t.Errorf("producer %d got job %s, producer 0 got %s: two live jobs hold one key", i, ids[i], ids[0])
		}
	}
	if c := h.census(); c.Jobs != 1 || c.Events != 1 {
		t.Errorf("store holds %+v, want one job with one event", c)
	}
}
