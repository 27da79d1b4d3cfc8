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

func TestMigrateAfterEnqueue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	stint(t, db, "enqueue", "--kind", "k").ok(t)
	if got := stint(t, db, "migrate").ok(t).stdout; !strings.HasPrefix(got, "up to date") {
		t.Errorf("migrate after enqueue printed %q, want up to date", got)
	}
}
