package postgres_test

import (
	"slices"
	"testing"

	"github.com/stint-dev/stint/store/postgres"
)

// TestAnalyzeStaleTables: the driver leaves a table alone until its rows
// changed by more than autovacuum's threshold since the last analyze, then
// analyzes it (the planner then knows its size, and cached plans made when
// it was empty are replaced), but not again while its size holds. With
// DisableAnalyze it never does.
func TestAnalyzeStaleTables(t *testing.T) {
	t.Parallel()
	for _, disabled := range []bool{false, true} {
		s, d := newStore(t, postgres.WithoutProbeLoop(postgres.Options{DisableAnalyze: disabled}))
		if got, err := d.AnalyzeStale(t.Context()); err != nil || slices.Contains(got, "jobs") {
			t.Fatalf("disabled=%v: a fresh schema: analyzed %v (%v), want not jobs", disabled, got, err)
		}
		enqueue(t, s, 200, "analyze")
		churn(t, d)
		got, err := d.AnalyzeStale(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var tuples float64
		if err := d.Pool().QueryRow(t.Context(), `SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass`).Scan(&tuples); err != nil {
			t.Fatal(err)
		}
		if disabled {
			if len(got) != 0 || tuples >= 0 {
				t.Fatalf("DisableAnalyze: analyzed %v, jobs' reltuples %v; want nothing analyzed", got, tuples)
			}
			continue
		}
		if !slices.Contains(got, "jobs") || tuples != 200 {
			t.Fatalf("after 200 jobs changed: analyzed %v, jobs' reltuples %v; want jobs analyzed, 200 rows", got, tuples)
		}
		// Churn at a steady size (every row changed again, none added) is
		// left to autovacuum: the plans follow the size.
		churn(t, d)
		if got, err := d.AnalyzeStale(t.Context()); err != nil || slices.Contains(got, "jobs") {
			t.Fatalf("after churn at 200 rows: analyzed %v (%v), want not jobs", got, err)
		}
	}
}

// churn changes every job row from a connection of the test's own and
// flushes its statistics, so the counts are in before the check reads them.
func churn(t *testing.T, d *postgres.Driver) {
	t.Helper()
	conn, err := d.Pool().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{`UPDATE jobs SET updated_at = updated_at`, `SELECT pg_stat_force_next_flush()`, `SELECT 1`} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
}
