package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestJobsSteps: jobs show lists a job's steps (and --json has them),
// jobs signal delivers a signal once, and jobs export-steps writes the
// golden file.
func TestJobsSteps(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	id := jobWithSteps(t, db)

	human := stint(t, db, "jobs", "show", id).ok(t).stdout
	for _, want := range []string{"steps:", "charge", "ship", "5ms"} {
		if !strings.Contains(human, want) {
			t.Errorf("show lacks %q:\n%s", want, human)
		}
	}
	var shown struct {
		Steps []store.StepRecord `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stint(t, db, "jobs", "show", id, "--json").ok(t).stdout), &shown); err != nil || len(shown.Steps) != 2 {
		t.Fatalf("show --json steps: %+v %v", shown.Steps, err)
	}

	out := stint(t, db, "jobs", "signal", id, "approve", "--payload", `{"by":"ada"}`).ok(t).stdout
	if !strings.Contains(out, `"ada"`) {
		t.Errorf("signal printed %s", out)
	}
	stint(t, db, "jobs", "signal", id, "approve").failed(t, cli.ExitUsage, "first one wins")
	stint(t, db, "jobs", "signal", id, "x", "--payload", "{").usageError(t, "--payload")
	stint(t, db, "jobs", "signal", "no-such-job", "x").notFound(t, "no-such-job")

	var g step.Golden
	if err := json.Unmarshal([]byte(stint(t, db, "jobs", "export-steps", id).ok(t).stdout), &g); err != nil {
		t.Fatal(err)
	}
	if g.Seed != 42 || g.Kind != "order" || len(g.Steps) != 2 || g.Steps[1].Name != "ship" {
		t.Errorf("golden %+v", g)
	}
}

// jobWithSteps enqueues a job with seed 42 in the database db, claims it
// and records two steps, charge and ship; it returns the job's id.
func jobWithSteps(t *testing.T, db string) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.OpenStore(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "order", Env: map[string]string{lifecycle.SeedEnv: "42"}}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := st.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"default"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v", err)
	}
	ss, _ := store.Steps(st)
	for i, name := range []string{"charge", "ship"} {
		if _, _, err := ss.JobStepRecord(ctx, &store.JobStepParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
			Seq: i + 1, Name: name, Status: store.StepOK, Output: json.RawMessage(`{"ok":true}`), DurationMS: 5}); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()
	return res[0].Job.ID
}
