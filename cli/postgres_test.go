package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store/postgres/pgtest"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// TestPostgres runs the commands against PostgreSQL (STINT_TEST_DATABASE_URL)
// in a schema of its own, chosen once with the flags and once with the
// environment.
func TestPostgres(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.NewSchema(t)
	flags := func(args ...string) result {
		t.Helper()
		return stintEnv(t, cli.Env{}, append([]string{"--database-url", url, "--schema", schema}, args...)...)
	}
	env := cli.Env{Getenv: func(k string) string {
		return map[string]string{cli.EnvDatabaseURL: url, cli.EnvSchema: schema}[k]
	}}
	fromEnv := func(args ...string) result {
		t.Helper()
		return stintEnv(t, env, args...)
	}

	if got, want := flags("migrate").ok(t).stdout, "up to date (PostgreSQL schema "+schema+")\n"; got != want {
		t.Errorf("migrate printed %q, want %q", got, want)
	}
	id := strings.TrimSpace(flags("enqueue", "--kind", "email.send", "--payload", `{"to": "ada"}`).ok(t).stdout)
	if got := fromEnv("jobs", "ls", "--state", "queued").ok(t).stdout; !strings.Contains(got, id) {
		t.Errorf("jobs ls printed %q, want job %s", got, id)
	}
	var j lifecycle.Job
	if err := json.Unmarshal([]byte(fromEnv("jobs", "show", id, "--json").ok(t).stdout), &j); err != nil || j.Kind != "email.send" {
		t.Errorf("jobs show --json: %+v, %v", j, err)
	}
	if got, want := flags("jobs", "cancel", id).ok(t).stdout, "job "+id+": cancelled\n"; got != want {
		t.Errorf("jobs cancel printed %q, want %q", got, want)
	}
	if got, want := fromEnv("verify").ok(t).stdout, "verified 1 job, 2 events: 0 findings\n"; got != want {
		t.Errorf("verify printed %q, want %q", got, want)
	}
	fromEnv("jobs", "events", "no-such-job").notFound(t, "no-such-job")
	fromEnv("jobs", "show", "no-such-job").notFound(t, "no job has this id")
}

// Reads never write: a command other than migrate, dev, bench and server on
// a schema that does not exist (a typo) says so, names migrate, and creates
// nothing. (Needs the PostgreSQL driver's NoMigrate.)
func TestPostgresReadsNeverCreateASchema(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	typo := "stint_typo_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // in case a command did create it
		_, _ = db.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+typo+" CASCADE")
		_ = db.Close()
	})
	for _, args := range [][]string{{"jobs", "ls"}, {"verify"}, {"enqueue", "--kind", "k"}, {"jobs", "show", "x"}} {
		r := stintEnv(t, cli.Env{}, append([]string{"--database-url", url, "--schema", typo}, args...)...)
		r.usageError(t, "stint migrate")
	}
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", typo).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s exists after read commands (%d, %v)", typo, n, err)
	}
}

func TestPostgresBadURL(t *testing.T) {
	t.Parallel()
	r := stintEnv(t, cli.Env{}, "--database-url", "postgres://host:notaport/db", "jobs", "ls")
	r.usageError(t, "bad --database-url")
}
