package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
	"github.com/stint-dev/stint/store/storetest"
)

// TestSQLite runs the conformance suite on the embedded backend, each
// subtest on a fresh database file.
func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openSQLite(t, filepath.Join(t.TempDir(), "stint.db")) })
}

// TestSQLiteCorruption runs the corruption suite on the embedded backend:
// each checked column changed by hand, through a second connection to the
// same file, must be found by Verify.
func TestSQLiteCorruption(t *testing.T) {
	storetest.Corruption(t, func(t *testing.T) (store.Store, storetest.Corrupter) {
		path := filepath.Join(t.TempDir(), "stint.db")
		s := openSQLite(t, path)
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return s, sqliteCorrupter(db)
	})
}

// TestSQLiteRunCorruption runs the corruption suite for runs on the
// embedded backend: each checked run column changed by hand must be found.
func TestSQLiteRunCorruption(t *testing.T) {
	storetest.RunCorruption(t, func(t *testing.T) (store.Store, storetest.RunCorrupter) {
		path := filepath.Join(t.TempDir(), "stint.db")
		s := openSQLite(t, path)
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return s, sqliteRowCorrupter(db, "runs")
	})
}

// BenchmarkSQLite runs the hot-path benchmarks shared by every backend.
func BenchmarkSQLite(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openSQLite(b, filepath.Join(b.TempDir(), "stint.db")) })
}

func openSQLite(t testing.TB, path string) store.Store {
	s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// corruptions says how the corrupter changes each checked column, by type:
// state becomes another state, a text gets a suffix, a number grows by one,
// a time (Unix microseconds) moves by an hour or, when NULL, gets a value.
var corruptions = map[string]string{
	"state": `CASE state WHEN 'queued' THEN 'running' ELSE 'queued' END`,
}

func init() {
	for _, c := range []string{"queue", "kind", "tenant", "topic", "dedupe_key", "lease_id", "owner", "result_digest", "reason_code", "reason", "rerun_of"} {
		corruptions[c] = c + ` || '-corrupt'`
	}
	for _, c := range []string{"attempt", "failures", "rev", "priority"} {
		corruptions[c] = c + ` + 1`
	}
	for _, c := range []string{"created_at", "run_at", "lease_expires_at", "timeout_at", "cancel_deadline", "deadline", "finished_at", "started_at", "reported_at", "updated_at"} {
		corruptions[c] = `coalesce(` + c + ` + 3600000000, created_at + 3600000000)`
	}
}

func sqliteCorrupter(db *sql.DB) storetest.Corrupter {
	return storetest.Corrupter(sqliteRowCorrupter(db, "jobs"))
}

// sqliteRowCorrupter changes one column of the row with id in table (jobs
// or runs, which name their common columns alike).
func sqliteRowCorrupter(db *sql.DB, table string) func(ctx context.Context, id, column string) error {
	return func(ctx context.Context, id, column string) error {
		expr, ok := corruptions[column]
		if !ok {
			return fmt.Errorf("no corruption for column %q", column)
		}
		res, err := db.ExecContext(ctx, `UPDATE `+table+` SET `+column+` = `+expr+` WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%s %s: %d rows changed", table, id, n)
		}
		return nil
	}
}
