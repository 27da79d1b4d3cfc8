package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// v2Golden is one job of testdata/v2_golden.json: what the release before
// migration 0003 read back for it.
type v2Golden struct {
	Name       string                `json:"name"`
	Job        lifecycle.Job         `json:"job"`
	Events     []lifecycle.Event     `json:"events"`
	Provenance *lifecycle.Provenance `json:"provenance"`
}

// TestUpgradeFromV2 builds a database with the layout before 0003 (the
// migrations up to 0002 and the rows testdata/v2.sql holds: a job in every
// state), migrates it, and expects every job, event and provenance record
// to read back as that release read them, and Verify to find nothing.
func TestUpgradeFromV2(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	opts := postgres.Options{Schema: pgtest.NewSchema(t), Logger: pgtest.Logger, MaxConns: 2}
	d, err := postgres.OpenAt(ctx, url, opts, 2)
	if err != nil {
		t.Fatalf("open at version 2: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	loadV2(t, url, opts.Schema)

	if err := d.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := d.EnsurePartitions(ctx, time.Time{}); err != nil {
		t.Fatalf("ensure partitions: %v", err)
	}
	s := store.New(d, store.Options{})
	// 0010: the timeout index leaves out the running jobs without a timeout.
	var def string
	if err := d.Pool().QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_timeout_at_idx'`, opts.Schema).Scan(&def); err != nil {
		t.Fatalf("read the timeout index: %v", err)
	}
	if !strings.Contains(def, "timeout_at IS NOT NULL") {
		t.Errorf("the timeout index is %q, want it to leave out jobs without a timeout", def)
	}

	b, err := os.ReadFile("testdata/v2_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []v2Golden
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	// Failures were not counted before 0003: the migration counts the
	// attempts that ended in failure from the events.
	wantFailures := map[string]int{"retrying_last_error": 1, "succeeded_after_retry": 1, "failed": 1, "dead_lettered_exhausted": 1}
	for _, g := range golden {
		t.Run(g.Name, func(t *testing.T) {
			got, err := s.JobGet(ctx, g.Job.ID)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.Failures != wantFailures[g.Name] {
				t.Errorf("failures = %d, want %d", got.Failures, wantFailures[g.Name])
			}
			if g.Job.StartedAt != nil && got.AttemptStartedAt == nil {
				t.Errorf("attempt_started_at is not set on a job that started")
			}
			if g.Provenance != nil && got.ResultDigest != g.Provenance.ResultDigest {
				t.Errorf("result_digest = %q, want the provenance's %q", got.ResultDigest, g.Provenance.ResultDigest)
			}
			// The fields 0003 added are checked above; the rest must be as before.
			cmp := got
			cmp.Failures, cmp.AttemptStartedAt, cmp.ResultDigest = 0, nil, ""
			sameJSON(t, "job", cmp, g.Job)

			evs, err := s.JobEvents(ctx, g.Job.ID)
			if err != nil {
				t.Fatalf("events: %v", err)
			}
			sameJSON(t, "events", evs, g.Events)

			p, err := s.JobProvenance(ctx, g.Job.ID)
			switch {
			case g.Provenance == nil && !errors.Is(err, store.ErrNotFound):
				t.Errorf("provenance of a live job: %+v, %v; want not found", p, err)
			case g.Provenance != nil && err != nil:
				t.Errorf("provenance: %v", err)
			case g.Provenance != nil:
				sameJSON(t, "provenance", p, *g.Provenance)
			}
		})
	}
	rep, err := s.Verify(ctx, &store.VerifyParams{})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("verify after the upgrade: %+v, %v; want no findings", rep.Findings, err)
	}

	// The upgraded store works: the queued job is claimed and completed,
	// and new events follow the old ones.
	var queued lifecycle.Job
	for _, g := range golden {
		if g.Name == "queued" {
			queued = g.Job
		}
	}
	jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{queued.Queue}, Limit: 1, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 1 || jobs[0].ID != queued.ID {
		t.Fatalf("claim after the upgrade: %v, %v", jobs, err)
	}
	res, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: store.OwnerParams{JobID: queued.ID, LeaseID: jobs[0].LeaseID}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("complete after the upgrade: %v, %v", res, err)
	}
	evs, err := s.JobEvents(ctx, queued.ID)
	if err != nil || len(evs) != 4 || evs[3].ID <= evs[0].ID {
		t.Fatalf("events after the upgrade: %+v, %v; want 4 with new ids after the old", evs, err)
	}
}

// loadV2 runs testdata/v2.sql into schema.
func loadV2(t *testing.T, url, schema string) {
	t.Helper()
	sql, err := os.ReadFile("testdata/v2.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	text := strings.ReplaceAll(string(sql), "__SCHEMA__", pgx.Identifier{schema}.Sanitize())
	if _, err := conn.PgConn().Exec(t.Context(), text).ReadAll(); err != nil {
		t.Fatalf("load testdata/v2.sql: %v", err)
	}
}

// sameJSON fails the test unless got and want encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s after the upgrade:\n got %s\nwant %s", what, g, w)
	}
}
