package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func TestEnqueueEveryFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
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
	db := newDB(t)
	id := strings.TrimSpace(stint(t, db, "enqueue", "--kind", "k").ok(t).stdout)
	j := getJob(t, db, id)
	if j.Queue != lifecycle.DefaultQueue || j.State != lifecycle.Queued || j.Priority != 0 || j.MaxAttempts != lifecycle.DefaultMaxAttempts {
		t.Errorf("job %+v: want queued in %q, priority 0, %d attempts", j, lifecycle.DefaultQueue, lifecycle.DefaultMaxAttempts)
	}
}

func TestEnqueueNumericPriority(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id := strings.TrimSpace(stint(t, db, "enqueue", "--kind", "k", "--priority", "-7").ok(t).stdout)
	if p := getJob(t, db, id).Priority; p != -7 {
		t.Errorf("priority %d, want -7", p)
	}
}

func TestEnqueueJSON(t *testing.T) {
	t.Parallel()
	db := newDB(t)
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
	db := newDB(t)
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
	db := newDB(t)
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
