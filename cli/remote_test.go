package cli_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
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
