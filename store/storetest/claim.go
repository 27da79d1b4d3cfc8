package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testClaim checks what JobClaim selects and what it grants.
func testClaim(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("order", func(t *testing.T) { t.Parallel(); testClaimOrder(t, newStore) })
	t.Run("filters", func(t *testing.T) { t.Parallel(); testClaimFilters(t, newStore) })
	t.Run("topics", func(t *testing.T) { t.Parallel(); testClaimTopics(t, newStore) })
	t.Run("only_due_queued_jobs", func(t *testing.T) { t.Parallel(); testClaimDue(t, newStore) })
	t.Run("start_in_the_same_call", func(t *testing.T) { t.Parallel(); testClaimStart(t, newStore) })
	t.Run("release_with_requeue", func(t *testing.T) { t.Parallel(); testReleaseRequeue(t, newStore) })
	t.Run("retried_by_request_id", func(t *testing.T) { t.Parallel(); testClaimRetry(t, newStore) })
}

// claimAll claims up to limit jobs of queues at the next tick.
func (h *harness) claimAll(worker string, queues, kinds []string, limit int) []store.Job {
	h.t.Helper()
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: worker, Queues: queues, Kinds: kinds, Limit: limit, LeaseTTL: leaseTTL, Now: h.tick()})
	if err != nil {
		h.t.Fatalf("claim: %v", err)
	}
	return jobs
}

// testClaimOrder: priority DESC, then created_at, then id.
func testClaimOrder(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	enq := func(prio int, n int) []string {
		at := h.tick()
		specs := make([]lifecycle.Spec, n)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: "k", Queue: "orders", Priority: prio}
		}
		res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: specs, Now: at})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		ids := make([]string, n)
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		return ids
	}
	low := enq(lifecycle.PriorityBatch, 2)
	old := enq(lifecycle.PriorityDefault, 3) // one created_at, ordered by id
	newer := enq(lifecycle.PriorityDefault, 1)
	high := enq(lifecycle.PriorityCritical, 1)
	sortedIDs(old)
	want := append(append(append(high, old...), newer...), sortedIDs(low)...)
	var got []string
	for range want {
		jobs := h.claimAll("w", []string{"orders"}, nil, 1)
		if len(jobs) != 1 {
			t.Fatalf("claim returned %d jobs, want 1", len(jobs))
		}
		got = append(got, jobs[0].ID)
	}
	if asJSON(got) != asJSON(want) {
		t.Errorf("claim order\n got %v\nwant %v (priority DESC, created_at, id)", got, want)
	}
	if jobs := h.claimAll("w", []string{"orders"}, nil, 5); len(jobs) != 0 {
		t.Errorf("an empty queue gave %d jobs", len(jobs))
	}
}

// sortedIDs sorts ids in place and returns them.
func sortedIDs(ids []string) []string {
	slices.Sort(ids)
	return ids
}

// testClaimFilters: queues, kinds and limit select; each claimed job gets
// its own fresh lease, the worker as owner, and now + TTL as expiry.
func testClaimFilters(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	at := h.tick()
	var specs []lifecycle.Spec
	for _, q := range []string{"a", "b", "c"} {
		for _, k := range []string{"resize", "email"} {
			specs = append(specs, lifecycle.Spec{Kind: k, Queue: q}, lifecycle.Spec{Kind: k, Queue: q})
		}
	}
	if _, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: specs, Now: at}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	jobs := h.claimAll("w1", []string{"a", "b"}, []string{"resize"}, 3)
	if len(jobs) != 3 {
		t.Fatalf("limit 3 gave %d jobs", len(jobs))
	}
	leases := map[string]bool{}
	for _, j := range jobs {
		if (j.Queue != "a" && j.Queue != "b") || j.Kind != "resize" {
			t.Errorf("claimed %s/%s outside queues a,b and kind resize", j.Queue, j.Kind)
		}
		if j.State != lifecycle.Claimed || j.Owner != "w1" || j.Attempt != 1 || !j.LeaseExpiresAt.Equal(h.now.Add(leaseTTL)) {
			t.Errorf("claimed job %s", asJSON(j))
		}
		leases[j.LeaseID] = true
	}
	if len(leases) != 3 {
		t.Errorf("%d distinct leases for 3 claims: each claim needs its own fencing token", len(leases))
	}
	rest := h.claimAll("w2", []string{"a", "b"}, []string{"resize"}, 10)
	if len(rest) != 1 {
		t.Errorf("the second claim got %d jobs, want the 1 left", len(rest))
	}
	if any := h.claimAll("w3", []string{"a", "b", "c"}, nil, 100); len(any) != 8 {
		t.Errorf("a claim of any kind got %d jobs, want the 8 left", len(any))
	}
}

// testClaimDue: scheduled, retrying, blocked and leased jobs are not
// claimable; a scheduled job is once promoted.
func testClaimDue(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	var queues []string
	for _, s := range lifecycle.States {
		if s != lifecycle.Queued {
			queues = append(queues, h.build(s).Queue)
		}
	}
	if jobs := h.claimAll("w", queues, nil, 100); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs that are not queued: %s", len(jobs), asJSON(jobs))
	}
	f := h.build(lifecycle.Scheduled)
	h.advance(2 * time.Hour)
	if jobs := h.claimAll("w", []string{f.Queue}, nil, 1); len(jobs) != 0 {
		t.Fatalf("claimed a scheduled job before it was promoted")
	}
	h.system(f, lifecycle.Command{Op: lifecycle.OpPromote})
	if jobs := h.claimAll("w", []string{f.Queue}, nil, 1); len(jobs) != 1 || jobs[0].ID != f.ID {
		t.Fatalf("the promoted job was not claimed: %d jobs", len(jobs))
	}
	// A blocked job with a run_at waits for it even once its dependencies
	// are done: unblock is refused until run_at.
	b := h.build(lifecycle.Blocked, runAtIn(time.Hour))
	before := h.snap(b.ID)
	_, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: b.ID, Command: lifecycle.Command{Op: lifecycle.OpUnblock, Actor: lifecycle.ActorSystem}, Now: h.tick()})
	rejected(t, err, store.ErrInvalidTransition)
	h.unchanged(before)
	h.advance(2 * time.Hour)
	h.system(b, lifecycle.Command{Op: lifecycle.OpUnblock})
	if jobs := h.claimAll("w", []string{b.Queue}, nil, 1); len(jobs) != 1 || jobs[0].ID != b.ID {
		t.Fatalf("the unblocked job was not claimed: %d jobs", len(jobs))
	}
}

// testClaimStart: Start claims and starts in one transaction: two events
// (claimed, started), rev + 2, one attempt.
func testClaimStart(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Queued, timeoutOf(time.Minute))
	at := h.tick()
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "pool", Queues: []string{f.Queue}, Limit: 1, LeaseTTL: leaseTTL, Start: true, Now: at})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim with start: %d jobs, %v", len(jobs), err)
	}
	s := h.snap(f.ID)
	if !sameJob(jobs[0], s.Job) {
		t.Errorf("returned %s, stored %s", asJSON(jobs[0]), asJSON(s.Job))
	}
	j := s.Job
	if j.State != lifecycle.Running || j.Rev != 3 || j.Attempt != 1 || !j.StartedAt.Equal(*at) || !j.TimeoutAt.Equal(at.Add(time.Minute)) {
		t.Errorf("after claim+start: %s", asJSON(j))
	}
	if len(s.Events) != 3 || s.Events[1].Type != lifecycle.EventClaimed || s.Events[2].Type != lifecycle.EventStarted {
		t.Errorf("events %s, want enqueued, claimed, started", asJSON(s.Events))
	}
	checkJob(t, s)
}

// testReleaseRequeue: a release with Requeue stalls and requeues in one
// call, so the job is claimable at once; a release uses no retry, so it is
// requeued even on the job's last attempt.
func testReleaseRequeue(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	for _, c := range []struct {
		max  int
		want lifecycle.State
	}{{3, lifecycle.Queued}, {1, lifecycle.Queued}} {
		f := h.build(lifecycle.Running, maxAttempts(c.max))
		j, err := h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: h.own(f), Requeue: true})
		if err != nil || j.State != c.want {
			t.Fatalf("release with requeue (max_attempts %d): state %s, err %v; want %s", c.max, j.State, err, c.want)
		}
		s := h.snap(f.ID)
		if !sameJob(j, s.Job) || s.Job.Rev != 5 || s.Events[3].Type != lifecycle.EventStalled || s.Events[3].Actor != lifecycle.ActorOwner {
			t.Errorf("after release with requeue: %s\nevents %s", asJSON(s.Job), asJSON(s.Events))
		}
		checkJob(t, s)
		before := h.snap(f.ID)
		_, err = h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: h.own(f), Requeue: true})
		rejected(t, err, store.ErrStaleLease) // the lease was given back: it is stale now
		h.unchanged(before)
	}
}
