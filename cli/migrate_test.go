package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stint-dev/stint/store/sqlite"
)

func TestMigrate(t *testing.T) {
	t.Parallel()
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := ms[len(ms)-1].Name
	db := newDB(t)

	var want strings.Builder
	for _, m := range ms {
		want.WriteString("applied " + m.Name + "\n")
	}
	if got := stint(t, db, "migrate").ok(t).stdout; got != want.String() {
		t.Errorf("first migrate printed %q, want %q", got, want.String())
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("migrate made no database: %v", err)
	}
	if got, want := stint(t, db, "migrate").ok(t).stdout, "up to date (latest migration "+latest+")\n"; got != want {
		t.Errorf("second migrate printed %q, want %q", got, want)
	}
}

// Only migrate (and dev, bench, server) creates a database: enqueue into
// one that does not exist says so, names migrate, and creates nothing.
func TestEnqueueNeedsAMigratedDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	stint(t, db, "enqueue", "--kind", "k").usageError(t, "stint migrate")
	if _, err := os.Stat(db); err == nil {
		t.Fatalf("enqueue created %s", db)
	}
	stint(t, db, "migrate").ok(t)
	stint(t, db, "enqueue", "--kind", "k").ok(t)
	if got := stint(t, db, "migrate").ok(t).stdout; !strings.HasPrefix(got, "up to date") {
		t.Errorf("migrate after enqueue printed %q, want up to date", got)
	}
}

// Reads never write: a command other than migrate on a file with no stint
// schema (an empty file) says so, names migrate, and leaves the file as it
// was. (Needs the SQLite driver's NoMigrate.)
func TestReadsNeverMigrateSQLite(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"jobs", "ls"}, {"verify"}, {"enqueue", "--kind", "k"}, {"dlq", "ls"}} {
		stint(t, db, args...).usageError(t, "stint migrate")
		if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
			t.Fatalf("%v wrote to the database file (%v)", args, err)
		}
	}
}
