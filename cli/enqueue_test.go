package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func TestEnqueueEveryFlag(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	deadline := runAt.Add(24 * time.Hour)
	r := stint(t, db, "enqueue", "--kind", "email.send", "--queue", "mail", "--payload", `{"to": "ada"}`,
		"--priority", "critical", "--run-at", runAt.Format(time.RFC3339), "--dedupe-key", "welcome-ada",
		"--max-attempts", "5", "--timeout", "1m30s", "--deadline", deadline.Format(time.RFC3339), "--tenant", "acme").ok(t)

	id := strings.TrimSpace(r.stdout)
	j := getJob(t, db, id)
	got := []any{j.Kind, j.Queue, string(j.Payload), j.Priority, j.State, j.RunAt.Equal(runAt), j.DedupeKey,
		j.MaxAttempts, j.Timeout.D(), j.Deadline != nil && j.Deadline.Equal(deadline), j.Tenant}
	want := []any{"email.send", "mail", `{"to":"ada"}`, lifecycle.PriorityCritical, lifecycle.Scheduled, true, "welcome-ada",
		5, 90 * time.Second, true, "acme"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d of the job: got %v, want %v (job %+v)", i, got[i], want[i], j)
		}
	}
}

func TestEnqueueDefaults(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	id := strings.TrimSpace(stint(t, db, "enqueue", "--kind", "k").ok(t).stdout)
	j := getJob(t, db, id)
	if j.Queue != lifecycle.DefaultQueue || j.State != lifecycle.Queued || j.Priority != 0 || j.MaxAttempts != lifecycle.DefaultMaxAttempts {
		t.Errorf("job %+v: want queued in %q, priority 0, %d attempts", j, lifecycle.DefaultQueue, lifecycle.DefaultMaxAttempts)
	}
}

func TestEnqueueNumericPriority(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	id := strings.TrimSpace(stint(t, db, "enqueue", "--kind", "k", "--priority", "-7").ok(t).stdout)
	if p := getJob(t, db, id).Priority; p != -7 {
		t.Errorf("priority %d, want -7", p)
	}
}

func TestEnqueueJSON(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	r := stint(t, db, "enqueue", "--kind", "k", "--payload", `[1,2]`, "--json").ok(t)

	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &fields); err != nil {
		t.Fatalf("--json printed %q: %v", r.stdout, err)
	}
	for _, k := range []string{"id", "kind", "queue", "state", "attempt", "rev", "run_at", "created_at", "max_attempts", "payload"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("--json output lacks %q: %s", k, r.stdout)
		}
	}
	var j lifecycle.Job
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if stored := getJob(t, db, j.ID); stored.Rev != j.Rev || stored.State != j.State || compact(t, j.Payload) != "[1,2]" {
		t.Errorf("--json printed %+v, the store holds %+v", j, stored)
	}
}

func TestEnqueueDedupe(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	first := stint(t, db, "enqueue", "--kind", "k", "--dedupe-key", "once").ok(t)
	again := stint(t, db, "enqueue", "--kind", "k", "--dedupe-key", "once")

	if again.code != cli.ExitOK || again.stdout != first.stdout {
		t.Fatalf("second enqueue: exit %d, stdout %q; want exit 0 and the first id %q", again.code, again.stdout, first.stdout)
	}
	if !strings.Contains(again.stderr, "dedupe key \"once\"") || !strings.Contains(again.stderr, strings.TrimSpace(first.stdout)) {
		t.Errorf("stderr %q: want it to name the key and the existing job", again.stderr)
	}
	withStore(t, db, func(ctx context.Context, st store.Store) {
		if jobs, err := st.JobList(ctx, &store.JobListParams{}); err != nil || len(jobs) != 1 {
			t.Errorf("%d jobs (%v), want 1", len(jobs), err)
		}
	})
}

func TestEnqueueDBFromEnvironment(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	env := cli.Env{Getenv: func(k string) string {
		if k == cli.EnvDB {
			return db
		}
		return ""
	}}
	id := strings.TrimSpace(stintEnv(t, env, "enqueue", "--kind", "k").ok(t).stdout)
	if j := getJob(t, db, id); j.Kind != "k" {
		t.Errorf("job %+v, want kind k in %s", j, db)
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestEnqueueSetsEverySpecField(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	r := stint(t, db, "enqueue", "--kind", "chat", "--topic", "job.chat.simple", "--context-ptr", "s3://b/k",
		"--adapter-id", "gpt", "--env", "locale=de", "--env", "tier=gold", "--correlation-id", "req-1", "--trace-id", "trace-1",
		"--budget-runtime", "10m", "--budget-steps", "50", "--budget-cost", "7", "--parent", "parent-1",
		"--on-exhausted", "failed", "--cancel-grace", "5s").ok(t)
	j := getJob(t, db, strings.TrimSpace(r.stdout))
	got := []any{j.Topic, j.ContextPtr, j.AdapterID, j.Env["locale"], j.Env["tier"], j.CorrelationID, j.TraceID,
		j.Budget != nil && j.Budget.MaxRuntime.D() == 10*time.Minute && j.Budget.MaxSteps == 50 && j.Budget.MaxCost == 7,
		j.ParentJobID, j.OnExhausted, j.CancelGrace.D()}
	want := []any{"job.chat.simple", "s3://b/k", "gpt", "de", "gold", "req-1", "trace-1", true, "parent-1", lifecycle.Failed, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d of the job: got %v, want %v (job %+v)", i, got[i], want[i], j)
		}
	}
}

func TestEnqueuePayloadFromFileAndStdin(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	// Over the OS's ~128 KB argument limit: only a file or stdin can carry it.
	big := `{"text":"` + strings.Repeat("x", 300<<10) + `"}`
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := strings.TrimSpace(stint(t, db, "enqueue", "--kind", "k", "--payload", "@"+file).ok(t).stdout)
	env := cli.Env{Stdin: strings.NewReader(big)}
	fromStdin := strings.TrimSpace(stintEnv(t, env, "--db", db, "enqueue", "--kind", "k", "--payload", "-").ok(t).stdout)
	for _, id := range []string{fromFile, fromStdin} {
		if p := getJob(t, db, id).Payload; len(p) != len(big) {
			t.Errorf("job %s has a payload of %d bytes, want %d", id, len(p), len(big))
		}
	}
}

func TestEnqueueBadSpecFlags(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"env without =", []string{"--env", "locale"}, "expected KEY=VALUE"},
		{"env twice", []string{"--env", "a=1", "--env", "a=2"}, `env key "a" is given twice`},
		{"on-exhausted", []string{"--on-exhausted", "retry"}, "expected dead_lettered or failed"},
		{"budget steps", []string{"--budget-steps", "0"}, "expected a positive integer"},
		{"payload file missing", []string{"--payload", "@" + filepath.Join(t.TempDir(), "none.json")}, "read the payload from"},
		{"payload file not json", []string{"--payload", "@" + bad}, "is not a JSON document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := migratedDB(t)
			stint(t, db, append([]string{"enqueue", "--kind", "k"}, tt.args...)...).usageError(t, tt.want)
		})
	}
}
