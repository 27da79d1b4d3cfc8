package doctor_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/doctor"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

func newSQLite(t *testing.T) (store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func enqueue(t *testing.T, s store.Store, n int) {
	t.Helper()
	specs := make([]stint.Spec, n)
	for i := range specs {
		specs[i] = stint.Spec{Kind: "doctor.test"}
	}
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
}

func TestSQLiteFresh(t *testing.T) {
	t.Parallel()
	s, path := newSQLite(t)
	enqueue(t, s, 10)
	rep, err := doctor.SQLite(t.Context(), path, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || len(rep.Checks) != 3 {
		t.Errorf("report %+v: want three checks and no finding", rep)
	}
}

// TestSQLiteHeldReader holds a read transaction on another connection while
// the store writes: the checkpoint cannot pass the reader's snapshot.
func TestSQLiteHeldReader(t *testing.T) {
	t.Parallel()
	s, path := newSQLite(t)
	enqueue(t, s, 10)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(t.Context(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, 200) // frames the reader's snapshot predates

	opts := doctor.Options{StarvedFrames: 1, WALBytes: 1}
	rep, err := doctor.SQLite(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings(rep, doctor.CheckCheckpoint)) != 1 || len(findings(rep, doctor.CheckWAL)) != 1 {
		t.Fatalf("findings %+v: want a starved checkpoint and a WAL past 1 byte", rep.Findings)
	}

	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	rep, err = doctor.SQLite(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if f := findings(rep, doctor.CheckCheckpoint); len(f) != 0 {
		t.Errorf("the reader is gone, and the checkpoint still starves: %+v", f)
	}
}

func TestSQLiteNoSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rep, err := doctor.SQLite(t.Context(), path, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings(rep, doctor.CheckSchema)) != 1 {
		t.Errorf("findings %+v: want one about the missing schema", rep.Findings)
	}
}

func TestSQLiteNoFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.db")
	if _, err := doctor.SQLite(context.Background(), path, doctor.Options{}); err == nil {
		t.Error("doctor accepted a missing file")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("doctor created %s (%v)", path, err)
	}
}
