package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// TestEventPartitions drives the partitioned history with a manual clock:
// partitions are made ahead, retention drops a whole partition once no job
// with an event in it exists, keeps one a live job still has events in,
// deletes no event row, and Verify stays clean across each drop.
func TestEventPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, d := newStore(t, postgres.Options{EventPartition: time.Hour})
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }

	if err := d.EnsurePartitions(ctx, t0); err != nil {
		t.Fatal(err)
	}
	want := []string{"job_events_p20300101_0000", "job_events_p20300101_0100", "job_events_p20300101_0200"}
	if got := partitions(t, d); !containsAll(got, want) {
		t.Fatalf("partitions after EnsurePartitions(%v): %v, want %v among them", t0, got, want)
	}
	// Ensuring again changes nothing.
	before := partitions(t, d)
	if err := d.EnsurePartitions(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if got := partitions(t, d); !slices.Equal(got, before) {
		t.Fatalf("a second EnsurePartitions changed %v to %v", before, got)
	}

	// Hour 0: a job finishes, another starts and keeps running.
	done0 := run(t, s, "q0", at(0), at(10*time.Minute))
	live := run(t, s, "q1", at(20*time.Minute), nil)
	// Hour 1: a job finishes.
	done1 := run(t, s, "q2", at(70*time.Minute), at(75*time.Minute))
	if got := rowsIn(t, d, "job_events_p20300101_0000"); got != 7 {
		t.Fatalf("hour 0 partition holds %d events, want 7", got)
	}

	res, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(2 * time.Hour)})
	if err != nil || res.Jobs != 2 || res.Events != 8 {
		t.Fatalf("retain: %+v, %v; want 2 jobs and their 8 events", res, err)
	}
	got := partitions(t, d)
	if !slices.Contains(got, "job_events_p20300101_0000") {
		t.Errorf("hour 0's partition was dropped while job %s, with events in it, is alive: %v", live.ID, got)
	}
	if slices.Contains(got, "job_events_p20300101_0100") {
		t.Errorf("hour 1's partition holds only deleted jobs' events, and ended before the cutoff: want it dropped, have %v", got)
	}
	if got := rowsIn(t, d, "job_events_p20300101_0000"); got != 7 {
		t.Errorf("hour 0 partition holds %d events after retention, want its 7 (no row deletes)", got)
	}
	for _, id := range []string{done0.ID, done1.ID} {
		if _, err := s.JobEvents(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("events of deleted job %s: %v, want not found", id, err)
		}
	}
	evs, err := s.JobEvents(ctx, live.ID)
	if err != nil || len(evs) != 3 {
		t.Errorf("events of the live job: %d, %v; want its 3", len(evs), err)
	}
	verifyClean(t, s)

	// The live job ends in hour 2; a later pass drops hour 0 and hour 2.
	if err := d.EnsurePartitions(ctx, *at(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	complete(t, s, live, at(150*time.Minute))
	res, err = s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(4 * time.Hour)})
	if err != nil || res.Jobs != 1 || res.Events != 4 {
		t.Fatalf("retain: %+v, %v; want the last job and its 4 events", res, err)
	}
	got = partitions(t, d)
	for _, p := range []string{"job_events_p20300101_0000", "job_events_p20300101_0200"} {
		if slices.Contains(got, p) {
			t.Errorf("partition %s outlived every job with an event in it: %v", p, got)
		}
	}
	if !slices.Contains(got, "job_events_p20300101_0400") || !slices.Contains(got, "job_events_default") {
		t.Errorf("partitions ahead of the cutoff, or the default, were dropped: %v", got)
	}
	verifyClean(t, s)

	// Hour 10 has no partition: its events land in the default, which
	// goes (and comes back empty) once none of its jobs exists.
	late := run(t, s, "q3", at(10*time.Hour), at(10*time.Hour+time.Minute))
	if n := rowsIn(t, d, "job_events_default"); n != 4 {
		t.Fatalf("the default partition holds %d events, want job %s's 4", n, late.ID)
	}
	if _, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(9 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := rowsIn(t, d, "job_events_default"); n != 4 {
		t.Fatalf("the default partition lost events of a live job: %d left", n)
	}
	if _, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(11 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := rowsIn(t, d, "job_events_default"); n != 0 {
		t.Errorf("the default partition holds %d events of deleted jobs after retention, want it dropped and made again empty", n)
	}
	verifyClean(t, s)
}

// run enqueues one job in queue at start, claims and starts it, and
// completes it at end unless end is nil.
func run(t *testing.T, s store.Store, queue string, start, end *time.Time) store.Job {
	t.Helper()
	ctx := t.Context()
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs(1, queue), Now: start})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: 1, LeaseTTL: 24 * time.Hour, Start: true, Now: start})
	if err != nil || len(jobs) != 1 || jobs[0].ID != res[0].Job.ID {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	if end != nil {
		complete(t, s, jobs[0], end)
	}
	return jobs[0]
}

func complete(t *testing.T, s store.Store, j store.Job, at *time.Time) {
	t.Helper()
	res, err := s.JobComplete(t.Context(), []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: at}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("complete: %v, %v", err, res[0].Err)
	}
	if res[0].Job.State != lifecycle.Succeeded {
		t.Fatalf("complete: job is %s", res[0].Job.State)
	}
}

// partitions lists the partitions of job_events by name.
func partitions(t *testing.T, d *postgres.Driver) []string {
	t.Helper()
	rows, err := d.Pool().Query(context.Background(),
		`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'job_events'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// rowsIn counts the rows of one partition, behind the store's back.
func rowsIn(t *testing.T, d *postgres.Driver, table string) int {
	t.Helper()
	var n int
	if err := d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
