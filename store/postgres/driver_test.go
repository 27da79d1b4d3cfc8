package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// newStore returns a store on a fresh schema and the driver under it.
func newStore(t testing.TB, opts postgres.Options) (store.Store, *postgres.Driver) {
	t.Helper()
	d := pgtest.NewDriver(t, opts)
	s := store.New(d, store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s, d
}

// specs returns n job specs of kind "test" in queue.
func specs(n int, queue string) []lifecycle.Spec {
	out := make([]lifecycle.Spec, n)
	for i := range out {
		out[i] = lifecycle.Spec{Kind: "test", Queue: queue, Payload: json.RawMessage(`{"n":1}`)}
	}
	return out
}

func enqueue(t testing.TB, s store.Store, n int, queue string) []store.Job {
	t.Helper()
	res, err := s.JobEnqueue(context.Background(), &store.JobEnqueueParams{Jobs: specs(n, queue)})
	if err != nil {
		t.Fatalf("enqueue %d jobs: %v", n, err)
	}
	jobs := make([]store.Job, len(res))
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

func verifyClean(t testing.TB, s store.Store) store.VerifyReport {
	t.Helper()
	rep, err := s.Verify(context.Background(), &store.VerifyParams{})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	for _, f := range rep.Findings {
		t.Errorf("verify: job %s: %s", f.JobID, f.Problem)
	}
	return rep
}

func TestOpenRejectsBadSchemaNames(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	for _, name := range []string{"Stint", "1stint", "stint-x", "stint x", `st"int`, strings.Repeat("s", 58)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := postgres.Open(context.Background(), url, postgres.Options{Schema: name})
			if err == nil || !strings.Contains(err.Error(), "schema name") {
				t.Fatalf("Open with schema %q: got %v, want a schema name error", name, err)
			}
		})
	}
}

func TestOpenConcurrentlyMigratesOnce(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.NewSchema(t)
	const n = 8
	var wg sync.WaitGroup
	drivers := make([]*postgres.Driver, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			drivers[i], errs[i] = postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 2, Logger: pgtest.Logger})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer drivers[i].Close()
	}
	if err := drivers[0].Migrate(context.Background()); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	var versions int
	if err := drivers[0].Pool().QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if versions != len(files) {
		t.Errorf("schema_migrations has %d rows, want %d (one per migration)", versions, len(files))
	}
}

func TestJobLifecycleRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Options{})
	ctx := context.Background()
	job := enqueue(t, s, 1, "q")[0]

	claimed, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w1", Queues: []string{"q"}, Limit: 10, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(claimed) != 1 || claimed[0].ID != job.ID || claimed[0].State != lifecycle.Running {
		t.Fatalf("claim: %v %+v", err, claimed)
	}
	res, err := s.JobComplete(ctx, []store.JobCompleteParams{{
		OwnerParams: store.OwnerParams{JobID: job.ID, LeaseID: claimed[0].LeaseID}, Result: json.RawMessage(`{"ok": true}`),
	}})
	if err != nil || res[0].Err != nil || res[0].Job.State != lifecycle.Succeeded {
		t.Fatalf("complete: %v %+v", err, res)
	}
	got, err := s.JobGet(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Result) != `{"ok":true}` || string(got.Payload) != `{"n":1}` {
		t.Errorf("result %s, payload %s: want them as written", got.Result, got.Payload)
	}
	events, err := s.JobEvents(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range events {
		types = append(types, string(e.Type))
		if e.ID == 0 || (i > 0 && e.ID <= events[i-1].ID) {
			t.Errorf("event %d has id %d: want ids assigned in order", i, e.ID)
		}
	}
	if want := "enqueued claimed started succeeded"; strings.Join(types, " ") != want {
		t.Errorf("events %v, want %s", types, want)
	}
	prov, err := s.JobProvenance(ctx, job.ID)
	if err != nil || prov.FinalState != lifecycle.Succeeded || prov.Events != 4 {
		t.Errorf("provenance: %v %+v", err, prov)
	}
	verifyClean(t, s)
}

// The store's clock is the database's: a job enqueued without Now carries
// PostgreSQL's transaction time.
func TestClockIsTheDatabases(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	dbNow := func() time.Time {
		var now time.Time
		if err := d.Pool().QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		return now
	}
	before := dbNow()
	job := enqueue(t, s, 1, "q")[0]
	after := dbNow()
	if job.CreatedAt.Before(before.Truncate(time.Microsecond)) || job.CreatedAt.After(after) {
		t.Errorf("created_at %v is not between the database's %v and %v", job.CreatedAt, before, after)
	}
}

// A write that finds the row changed since it was read is refused with
// ErrRevisionConflict, and the driver does not retry it.
func TestJobUpdateRevisionConflict(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	job := enqueue(t, s, 1, "q")[0]
	calls := 0
	err := d.InTx(ctx, func(tx store.Tx) error {
		calls++
		stale := job
		stale.Priority = 7
		return tx.JobUpdate(ctx, []store.JobUpdate{{Job: stale, PrevRev: job.Rev + 1}})
	})
	var le *lifecycle.Error
	if !errors.Is(err, store.ErrRevisionConflict) || !errors.As(err, &le) || le.JobID != job.ID {
		t.Fatalf("got %v, want a revision conflict on job %s", err, job.ID)
	}
	if calls != 1 {
		t.Errorf("fn ran %d times, want 1: a revision conflict is the caller's", calls)
	}
}

// Two installations in one database do not see each other's jobs.
func TestSchemasAreIsolated(t *testing.T) {
	t.Parallel()
	a, _ := newStore(t, postgres.Options{})
	b, _ := newStore(t, postgres.Options{})
	ctx := context.Background()
	enqueue(t, a, 3, "q")
	got, err := b.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 10, LeaseTTL: time.Minute})
	if err != nil || len(got) != 0 {
		t.Fatalf("claim in the other schema: %v, %d jobs; want none", err, len(got))
	}
}
