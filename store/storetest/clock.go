package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// clockSkew is how far the store's clock may be from this process's: the
// same machine for SQLite, the database server's for PostgreSQL.
const clockSkew = time.Minute

// testStoreClock: a request without a Now is timed by the store's own clock
// (the database's on PostgreSQL), every call of a job's life, maintenance
// passes included.
func testStoreClock(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	near := func(what string, got time.Time, from, to time.Time) {
		t.Helper()
		if got.Before(from.Add(-clockSkew)) || got.After(to.Add(clockSkew)) {
			t.Errorf("%s is %s; the store's clock should put it between %s and %s", what, got, from, to)
		}
	}
	from := time.Now()
	later := from.Add(time.Hour)
	res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{
		{Kind: "clock", Queue: "now"},
		{Kind: "clock", Queue: "later", RunAt: &later},
	}})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	near("created_at", res[0].Job.CreatedAt, from, time.Now())
	if res[1].Job.State != lifecycle.Scheduled {
		t.Errorf("a job due in an hour by the store's clock is %s, want scheduled", res[1].Job.State)
	}
	if n, err := h.s.JobPromoteDue(h.ctx, &store.MaintainParams{}); err != nil || n != 0 {
		t.Errorf("promote by the store's clock changed %d jobs (err %v); the job is due in an hour", n, err)
	}
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"now", "later"}, Limit: 5, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v; want the one due now", len(jobs), err)
	}
	near("lease_expires_at", *jobs[0].LeaseExpiresAt, from.Add(time.Hour), time.Now().Add(time.Hour))
	if n, err := h.s.JobStallExpired(h.ctx, &store.MaintainParams{}); err != nil || n != 0 {
		t.Errorf("the reaper by the store's clock stalled %d jobs (err %v); the lease runs for an hour", n, err)
	}
	done, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID}, Result: json.RawMessage(`1`)}})
	if err != nil || done[0].Err != nil {
		t.Fatalf("complete: %v %v", err, done[0].Err)
	}
	s := h.snap(jobs[0].ID)
	near("finished_at", *s.Job.FinishedAt, from, time.Now())
	checkJob(t, s)
}

// testSubMicrosecond: stores keep times to the microsecond. A Now finer
// than that is cut to the microsecond before it is used, so what a call
// returns, what the store keeps and what the events say agree, and the lease
// it grants expires on the microsecond.
func testSubMicrosecond(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	f := h.build(lifecycle.Queued)
	at := h.now.Add(time.Second + 1500*time.Nanosecond) // 1.0000015s on
	want := at.Truncate(time.Microsecond)
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{f.Queue}, Limit: 1, LeaseTTL: time.Minute, Start: true, Now: &at})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	s := h.snap(f.ID)
	if !sameJob(jobs[0], s.Job) {
		t.Errorf("claim returned %s\nthe store holds %s", asJSON(jobs[0]), asJSON(s.Job))
	}
	if !s.Job.StartedAt.Equal(want) || !s.Job.LeaseExpiresAt.Equal(want.Add(time.Minute)) || !s.Events[len(s.Events)-1].At.Equal(want) {
		t.Errorf("started_at %s, lease_expires_at %s, event at %s; want %s and %s", s.Job.StartedAt, s.Job.LeaseExpiresAt, s.Events[len(s.Events)-1].At, want, want.Add(time.Minute))
	}
	f.Lease = jobs[0].LeaseID
	expiry := want.Add(time.Minute).Add(999 * time.Nanosecond) // the microsecond the lease expires in
	before := h.snap(f.ID)
	_, err = h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: ownerAt(f, &expiry), LeaseTTL: time.Minute})
	rejected(t, err, store.ErrStaleLease)
	h.unchanged(before)
	checkJob(t, before)
}
