package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

func TestDoctorSQLite(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	r := stint(t, s.db, "doctor").ok(t)
	for _, want := range []string{"stint doctor: SQLite " + s.db, "ok  schema", "checkpoint", "nothing to do"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor printed %q, want %q in it", r.stdout, want)
		}
	}
	var rep struct {
		Backend  string            `json:"backend"`
		Checks   []json.RawMessage `json:"checks"`
		Findings []json.RawMessage `json:"findings"`
	}
	out := stint(t, s.db, "doctor", "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Backend != "sqlite" || len(rep.Checks) != 3 || len(rep.Findings) != 0 {
		t.Errorf("doctor --json printed %q (%v)", out, err)
	}
}

func TestDoctorBadInput(t *testing.T) {
	t.Parallel()
	stint(t, newDB(t), "doctor").usageError(t, "no database at")
	stint(t, newDB(t), "doctor", "--max-wal-mib", "0").usageError(t, "--max-wal-mib")
}

// TestDoctorPostgresFinds runs doctor on a schema that was never migrated:
// it says so and exits 1.
func TestDoctorPostgresFinds(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.NewSchema(t)
	r := stintEnv(t, cli.Env{}, "--database-url", url, "--schema", schema, "doctor")
	if r.code != cli.ExitFailure || !strings.Contains(r.stdout, "FOUND  schema") || !strings.Contains(r.stdout, "stint migrate") {
		t.Errorf("doctor exited %d and printed %q, want exit 1 and the missing schema", r.code, r.stdout)
	}
}
