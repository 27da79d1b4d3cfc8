package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestCommandsThroughServer: enqueue, jobs ls, jobs show, jobs events and
// jobs cancel work with --server and --token, and print what they print
// on the database itself.
func TestCommandsThroughServer(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := server.New(server.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tok, secret, err := server.NewToken(server.DefaultTenant, store.RoleClient, "cli")
	if err != nil {
		t.Fatal(err)
	}
	keeper, _ := store.TokensOf(st)
	if _, err := keeper.TokenCreate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	stint := func(args ...string) (string, string, int) {
		var out, errs syncBuffer
		env := cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }}
		code := cli.Main(context.Background(), args, env)
		return out.String(), errs.String(), code
	}
	remote := func(args ...string) (string, string, int) {
		return stint(append([]string{"--server", srv.URL, "--token", secret}, args...)...)
	}
	local := func(args ...string) (string, string, int) { return stint(append([]string{"--db", db}, args...)...) }

	out, errs, code := remote("enqueue", "--kind", "k", "--queue", "q", "--payload", `{"n":1}`, "--json")
	if code != 0 {
		t.Fatalf("enqueue through the server: exit %d: %s", code, errs)
	}
	id := jsonField(t, out, "id")
	for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "show", id}, {"jobs", "events", id}, {"jobs", "ls", "--json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r, rerr, rcode := remote(args...)
			l, lerr, lcode := local(args...)
			if rcode != 0 || lcode != 0 {
				t.Fatalf("exit %d (%s) through the server, %d (%s) locally", rcode, rerr, lcode, lerr)
			}
			if r != l {
				t.Fatalf("through the server:\n%s\nlocally:\n%s", r, l)
			}
		})
	}
	t.Run("cancel", func(t *testing.T) {
		if _, errs, code := remote("jobs", "cancel", id); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		j, err := st.JobGet(t.Context(), id)
		if err != nil || j.State != "cancelled" {
			t.Fatalf("job is %s (%v) after a cancel through the server", j.State, err)
		}
	})
	t.Run("bad token", func(t *testing.T) {
		_, errs, code := stint("--server", srv.URL, "--token", "nope", "jobs", "ls")
		if code == 0 || !strings.Contains(errs, "token") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
}

// jsonField returns the string field key of the JSON object in out.
func jsonField(t *testing.T, out, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	v, _ := m[key].(string)
	return v
}

// TestBenchViaAPI: stint bench --via-api works a batch through a loopback
// API server and its check passes.
func TestBenchViaAPI(t *testing.T) {
	t.Parallel()
	var out, errs syncBuffer
	env := cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }}
	code := cli.Main(context.Background(), []string{"bench", "--db", filepath.Join(t.TempDir(), "b.db"), "--jobs", "200",
		"--batch", "50", "--latency-samples", "5", "--via-api", "--no-progress"}, env)
	if code != 0 || !strings.Contains(out.String(), "through the API") {
		t.Fatalf("exit %d:\n%s\n%s", code, out.String(), errs.String())
	}
}

// TestRunsAndWebhooksThroughServer: runs create, ls, show, events, cancel
// and rerun, webhooks add, ls and test, and outbox ls work with --server
// and print what they print on the database itself.
func TestRunsAndWebhooksThroughServer(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := server.New(server.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tok, secret, err := server.NewToken(server.DefaultTenant, store.RoleAdmin, "cli")
	if err != nil {
		t.Fatal(err)
	}
	keeper, _ := store.TokensOf(st)
	if _, err := keeper.TokenCreate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	hits := make(chan string, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.Header.Get("webhook-signature")
	}))
	defer receiver.Close()
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"name": "ci", "jobs": [{"name": "build", "kind": "build", "queue": "ci"},
		{"name": "test", "kind": "test", "queue": "ci", "depends_on": ["build"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stint := func(args ...string) (string, string, int) {
		var out, errs syncBuffer
		env := cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }}
		code := cli.Main(context.Background(), args, env)
		return out.String(), errs.String(), code
	}
	remote := func(args ...string) (string, string, int) {
		return stint(append([]string{"--server", srv.URL, "--token", secret}, args...)...)
	}
	local := func(args ...string) (string, string, int) { return stint(append([]string{"--db", db}, args...)...) }
	mustRemote := func(args ...string) string {
		t.Helper()
		out, errs, code := remote(args...)
		if code != 0 {
			t.Fatalf("%v through the server: exit %d: %s", args, code, errs)
		}
		return out
	}

	var created struct {
		Run struct{ ID, State string } `json:"run"`
	}
	if err := json.Unmarshal([]byte(mustRemote("runs", "create", "--file", plan, "--json")), &created); err != nil || created.Run.State != "queued" {
		t.Fatalf("runs create --json: %+v, %v", created, err)
	}
	out := mustRemote("runs", "create", "--file", plan)
	if !strings.Contains(out, "created with 2 jobs") {
		t.Fatalf("runs create: %s", out)
	}
	runs, err := st.RunList(t.Context(), &store.RunListParams{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs in the database (%v), want 2", len(runs), err)
	}
	first, second := runs[0].ID, runs[1].ID
	mustRemote("runs", "cancel", second, "--reason", "not needed")
	if v, _ := st.RunGet(t.Context(), second); v.Run.State != "cancelled" {
		t.Fatalf("run is %s after a cancel through the server", v.Run.State)
	}
	if out := mustRemote("runs", "rerun", second, "--failed-only"); !strings.Contains(out, "reruns "+second+" with 2 jobs") {
		t.Fatalf("runs rerun: %s", out)
	}
	mustRemote("webhooks", "add", receiver.URL, "--secret", "0123456789abcdef0123", "--event", "run_succeeded")
	ws, err := st.WebhookList(t.Context())
	if err != nil || len(ws) != 1 {
		t.Fatalf("%d webhooks (%v), want 1", len(ws), err)
	}
	for _, args := range [][]string{{"runs", "ls"}, {"runs", "show", first}, {"runs", "show", second}, {"runs", "events", second},
		{"webhooks", "ls"}, {"outbox", "ls"}, {"outbox", "ls", "--dead"},
		{"runs", "show", second, "--json"}, {"runs", "ls", "--json"}, {"runs", "events", second, "--json"}, {"webhooks", "ls", "--json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r, rerr, rcode := remote(args...)
			l, lerr, lcode := local(args...)
			if rcode != 0 || lcode != 0 {
				t.Fatalf("exit %d (%s) through the server, %d (%s) locally", rcode, rerr, lcode, lerr)
			}
			if r != l {
				t.Fatalf("through the server:\n%s\nlocally:\n%s", r, l)
			}
		})
	}
	if out := mustRemote("webhooks", "test", ws[0].ID); !strings.Contains(out, "200 OK") {
		t.Fatalf("webhooks test: %s", out)
	}
	if sig := <-hits; !strings.HasPrefix(sig, "v1,") {
		t.Fatalf("the test event came with signature %q", sig)
	}
	mustRemote("webhooks", "rm", ws[0].ID)
	if ws, _ := st.WebhookList(t.Context()); len(ws) != 0 {
		t.Fatalf("%d webhooks after webhooks rm through the server", len(ws))
	}
	if _, errs, code := remote("runs", "show", "no-such-run"); code != 4 {
		t.Fatalf("runs show of a missing run: exit %d (%s), want 4", code, errs)
	}
	if _, errs, code := remote("runs", "create", "--file", "-"); code != 2 {
		t.Fatalf("runs create of an empty plan: exit %d (%s), want 2", code, errs)
	}
}
