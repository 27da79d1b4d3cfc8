package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/store"
)

// TestJobsStep: `stint jobs step NAME -- CMD` runs CMD once per job and
// replays its output after, on the database and through a server; a
// failing CMD records nothing and passes its exit status on; a stale lease
// records nothing.
func TestJobsStep(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	id := jobWithSteps(t, db)
	var lease string
	withStore(t, db, func(ctx context.Context, st store.Store) {
		j, err := st.JobGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		lease = j.LeaseID
	})
	log := filepath.Join(t.TempDir(), "runs.log")
	env := func(lease string) cli.Env {
		vars := map[string]string{"STINT_JOB_ID": id, "STINT_FENCING_TOKEN": lease}
		return cli.Env{Getenv: func(k string) string { return vars[k] }}
	}
	step := func(lease string, global []string, args ...string) result {
		return stintEnv(t, env(lease), append(append(global, "jobs", "step"), args...)...)
	}
	onDB := []string{"--db", db}
	build := []string{"build", "--", "sh", "-c", "echo built; echo build >> " + log}
	runs := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "\n")
	}

	if out := step(lease, onDB, build...).ok(t).stdout; out != "built\n" || runs() != 1 {
		t.Fatalf("first run printed %q, ran %d times", out, runs())
	}
	if out := step(lease, onDB, build...).ok(t).stdout; out != "built\n" || runs() != 1 {
		t.Fatalf("the replay printed %q, and the command ran %d times (want once)", out, runs())
	}
	if r := step(lease, onDB, "broken", "--", "sh", "-c", "exit 3"); r.code != 3 {
		t.Fatalf("a failing command: exit %d, want 3", r.code)
	}
	if r := step("not-the-lease", onDB, "late", "--", "sh", "-c", "echo late >> "+log); r.code == 0 || runs() != 2 {
		t.Fatalf("a stale lease: exit %d (%s); the command ran %d times", r.code, r.stderr, runs())
	}
	if r := step(lease, onDB, "charge", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "not recorded by `stint jobs step`") {
		t.Fatalf("a step of another engine: %+v", r)
	}
	stintEnv(t, cli.Env{}, "--db", db, "jobs", "step", "x", "--", "true").usageError(t, "STINT_JOB_ID")
	stintEnv(t, cli.Env{}, "--db", db, "jobs", "step", "x").usageError(t, "NAME -- CMD")

	// Through a server: the same replay, and a new step recorded there.
	url := startServerOn(t, db)
	onServer := []string{"--server", url}
	if out := step(lease, onServer, build...).ok(t).stdout; out != "built\n" || runs() != 2 {
		t.Fatalf("the replay through the server printed %q; the command ran %d times", out, runs())
	}
	if out := step(lease, onServer, "deliver", "--", "sh", "-c", "echo shipped").ok(t).stdout; out != "shipped\n" {
		t.Fatalf("a new step through the server printed %q", out)
	}
	var names []string
	withStore(t, db, func(ctx context.Context, st store.Store) {
		ss, _ := store.Steps(st)
		recs, err := ss.JobSteps(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			names = append(names, r.Name)
		}
	})
	if got := strings.Join(names, " "); got != "charge ship build deliver" {
		t.Fatalf("steps %q", got)
	}
}
