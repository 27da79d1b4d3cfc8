package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stint-dev/stint/store"
)

// TestRunsCreateYAML: a YAML plan makes the same run as its JSON twin, and
// a bad one is refused with exit 2 and nothing written.
func TestRunsCreateYAML(t *testing.T) {
	t.Parallel()
	db, dir := migratedDB(t), t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twins := map[string]string{
		"plan.json": `{"id": "ci-json", "name": "ci", "on_failure": "continue", "timeout": "30m", "jobs": [
  {"name": "build", "kind": "build", "queue": "ci", "payload": {"commit": "abc123", "date": "2026-01-02"}},
  {"name": "test", "kind": "test", "depends_on": ["build"]},
  {"name": "lint", "kind": "lint", "depends_on": ["build"], "allow_failure": true},
  {"name": "deploy", "kind": "deploy", "depends_on": ["test", "lint"]}]}`,
		"plan.yaml": `id: ci-yaml
name: ci
on_failure: continue
timeout: 30m
jobs:
  - name: build
    kind: build
    queue: ci
    payload: {commit: abc123, date: 2026-01-02}
  - {name: test, kind: test, depends_on: [build]}
  - {name: lint, kind: lint, depends_on: [build], allow_failure: true}
  - {name: deploy, kind: deploy, depends_on: [test, lint]}
`,
	}
	for name, text := range twins {
		stint(t, db, "runs", "create", "--file", write(name, text)).ok(t)
	}
	// Bad YAML: an unknown field, a syntax error, a depends_on outside the run.
	for i, bad := range []struct{ text, want string }{
		{"jobs:\n  - name: a\n    kind: k\n    dependson: [b]\n", "field dependson not found"},
		{"jobs: [{name: a, kind: k\n", "yaml"},
		{"jobs: [{name: a, kind: k, depends_on: [nowhere]}]\n", "nowhere"},
	} {
		stint(t, db, "runs", "create", "--file", write("bad"+string(rune('a'+i))+".yml", bad.text)).usageError(t, bad.want)
	}
	withStore(t, db, func(ctx context.Context, st store.Store) {
		runs, err := st.RunList(ctx, &store.RunListParams{})
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs: %+v, %v; want the two twins and nothing from the bad plans", runs, err)
		}
		views := map[string]store.RunView{}
		for _, id := range []string{"ci-json", "ci-yaml"} {
			v, err := st.RunGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			views[id] = v
		}
		a, b := views["ci-json"], views["ci-yaml"]
		if a.Run.Name != b.Run.Name || a.Run.OnFailure != b.Run.OnFailure || a.Run.Timeout != b.Run.Timeout || len(a.Jobs) != len(b.Jobs) {
			t.Fatalf("the twins differ:\n%+v\n%+v", a, b)
		}
		for i := range a.Jobs {
			ja, jb := a.Jobs[i], b.Jobs[i]
			ra, err := st.JobGet(ctx, ja.JobID)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := st.JobGet(ctx, jb.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if ja.Name != jb.Name || ja.AllowFailure != jb.AllowFailure || !slices.Equal(ja.DependsOn, jb.DependsOn) ||
				ra.Kind != rb.Kind || ra.Queue != rb.Queue || string(ra.Payload) != string(rb.Payload) || ra.State != rb.State {
				t.Errorf("job %d differs:\n%+v %+v\n%+v %+v", i, ja, ra, jb, rb)
			}
		}
	})
}
