package cli_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// viaServer is a SQLite database and a stint server over it, with an admin
// token of the default tenant, for commands run both ways.
type viaServer struct {
	db, url, admin string
	st             store.Store
}

func newViaServer(t *testing.T) *viaServer {
	t.Helper()
	v := &viaServer{db: filepath.Join(t.TempDir(), "stint.db")}
	st, err := sqlite.OpenStore(t.Context(), v.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := server.New(server.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	v.st, v.url = st, srv.URL
	v.admin = v.token(t, server.DefaultTenant, store.RoleAdmin)
	return v
}

// token makes a token of tenant and role in the database and returns its secret.
func (v *viaServer) token(t *testing.T, tenant string, role store.Role) string {
	t.Helper()
	tok, secret, err := server.NewToken(tenant, role, string(role)+"-"+tenant)
	if err != nil {
		t.Fatal(err)
	}
	keeper, _ := store.TokensOf(v.st)
	if _, err := keeper.TokenCreate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	return secret
}

func (v *viaServer) run(args ...string) result {
	var out, errs syncBuffer
	env := cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }}
	code := cli.Main(context.Background(), args, env)
	return result{code: code, stdout: out.String(), stderr: errs.String()}
}

// local runs a command on the database; remote through the server with secret.
func (v *viaServer) local(args ...string) result {
	return v.run(append([]string{"--db", v.db}, args...)...)
}
func (v *viaServer) remote(secret string, args ...string) result {
	return v.run(append([]string{"--server", v.url, "--token", secret}, args...)...)
}

// same fails unless args print the same through the server as on the database.
func (v *viaServer) same(t *testing.T, args ...string) string {
	t.Helper()
	r, l := v.remote(v.admin, args...), v.local(args...)
	if r.code != 0 || l.code != 0 {
		t.Fatalf("%s: exit %d (%s) through the server, %d (%s) on the database", strings.Join(args, " "), r.code, r.stderr, l.code, l.stderr)
	}
	if r.stdout != l.stdout {
		t.Fatalf("%s through the server:\n%s\non the database:\n%s", strings.Join(args, " "), r.stdout, l.stdout)
	}
	return r.stdout
}

// leaves lists every runnable command of the command line, such as
// "stint queues ls" (groups such as "stint queues" only print help, but
// "stint bench" runs and has subcommands).
func leaves(c *cobra.Command) []string {
	var out []string
	if c.Runnable() && c.Name() != "help" && (!c.HasSubCommands() || c.Name() == "bench") {
		out = append(out, c.CommandPath())
	}
	for _, sub := range c.Commands() {
		out = append(out, leaves(sub)...)
	}
	return out
}

// TestEveryCommandThroughServer runs every command of the command line
// through a server and on its database: each either prints the same both
// ways (after changing the database through the server, where it
// changes something), or says in one line that it needs direct database
// access and why. A command added later fails here until it is placed.
func TestEveryCommandThroughServer(t *testing.T) {
	t.Parallel()
	v := newViaServer(t)
	direct := []string{"stint migrate", "stint doctor", "stint verify", "stint dev", "stint server", "stint bench", "stint bench history", "stint bench soak", "stint bench bus",
		"stint bench steps", "stint bench remote"}
	// Covered by their own tests through a server (cli/remote_test.go,
	// cli/workerenv_test.go), or not using a store at all.
	elsewhere := map[string]string{
		"stint jobs cancel": "TestCommandsThroughServer", "stint jobs logs": "TestCommandsThroughServer",
		"stint dlq ls": "TestCommandsThroughServer", "stint dlq replay": "TestCommandsThroughServer",
		"stint runs create": "TestRunsAndWebhooksThroughServer", "stint runs ls": "TestRunsAndWebhooksThroughServer",
		"stint runs show": "TestRunsAndWebhooksThroughServer", "stint runs events": "TestRunsAndWebhooksThroughServer",
		"stint runs cancel": "TestRunsAndWebhooksThroughServer", "stint runs rerun": "TestRunsAndWebhooksThroughServer",
		"stint webhooks add": "TestRunsAndWebhooksThroughServer", "stint webhooks ls": "TestRunsAndWebhooksThroughServer",
		"stint webhooks rm": "TestRunsAndWebhooksThroughServer", "stint webhooks test": "TestRunsAndWebhooksThroughServer",
		"stint outbox ls": "TestRunsAndWebhooksThroughServer", "stint outbox replay": "TestRunsAndWebhooksThroughServer",
		"stint worker":          "TestWorkerFlagsRefused and the remote worker tests",
		"stint jobs step":       "TestJobsStep (a step of the job an --exec command runs for)",
		"stint webhooks listen": "a receiver: it opens no store",
	}
	here := map[string]func(t *testing.T){}
	var id string
	here["stint enqueue"] = func(t *testing.T) {
		r := v.remote(v.admin, "enqueue", "--kind", "report", "--queue", "batch", "--run-at", "2099-01-01T00:00:00Z")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		id = strings.TrimSpace(r.stdout)
		v.same(t, "jobs", "ls")
	}
	here["stint jobs ls"] = func(t *testing.T) { v.same(t, "jobs", "ls", "--json") }
	here["stint jobs show"] = func(t *testing.T) { v.same(t, "jobs", "show", id) }
	here["stint jobs events"] = func(t *testing.T) { v.same(t, "jobs", "events", id) }
	here["stint jobs signal"] = func(t *testing.T) {
		if r := v.remote(v.admin, "jobs", "signal", id, "approve", "--payload", `{"by":"ada"}`); r.code != 0 || !strings.Contains(r.stdout, `"ada"`) {
			t.Fatalf("%+v", r)
		}
		r, l := v.remote(v.admin, "jobs", "signal", id, "approve"), v.local("jobs", "signal", id, "approve")
		if r.code == 0 || r.code != l.code {
			t.Fatalf("a second signal of the name: exit %d (%s) through the server, %d (%s) on the database", r.code, r.stderr, l.code, l.stderr)
		}
	}
	here["stint jobs export-steps"] = func(t *testing.T) { v.same(t, "jobs", "export-steps", id) }
	here["stint queues pause"] = func(t *testing.T) {
		if r := v.remote(v.admin, "queues", "pause", "batch"); r.code != 0 || r.stdout != "queue batch: paused\n" {
			t.Fatalf("%+v", r)
		}
		if out := v.same(t, "queues", "ls"); !strings.Contains(out, "yes") {
			t.Fatalf("the queue is not paused:\n%s", out)
		}
	}
	here["stint queues limit"] = func(t *testing.T) {
		r := v.remote(v.admin, "queues", "limit", "batch", "--max-running", "3", "--rate", "10", "--per", "1m", "--key-limit", "2", "--fair", "--weight", "acme=3")
		l := v.local("queues", "limit", "other", "--max-running", "3", "--rate", "10", "--per", "1m", "--key-limit", "2", "--fair", "--weight", "acme=3")
		if r.code != 0 || strings.Replace(r.stdout, "batch", "other", 1) != l.stdout {
			t.Fatalf("through the server %+v, on the database %+v", r, l)
		}
		if r := v.remote(v.admin, "queues", "limit", "--kind", "send-sms", "--rate", "5", "--per", "1s"); r.code != 0 {
			t.Fatalf("kind limit: %+v", r)
		}
		v.same(t, "queues", "ls", "--json")
	}
	here["stint queues resume"] = func(t *testing.T) {
		if r := v.remote(v.admin, "queues", "resume", "batch"); r.code != 0 || r.stdout != "queue batch: resumed\n" {
			t.Fatalf("%+v", r)
		}
		v.same(t, "queues", "ls")
	}
	here["stint queues ls"] = func(t *testing.T) { v.same(t, "queues", "ls") }
	here["stint cron add"] = func(t *testing.T) {
		r := v.remote(v.admin, "cron", "add", "nightly", "--expr", "0 2 * * *", "--tz", "Europe/Paris", "--kind", "report",
			"--queue", "batch", "--payload", `{"full":true}`, "--max-attempts", "2", "--timeout", "1m")
		if r.code != 0 || !strings.Contains(r.stdout, "nightly") {
			t.Fatalf("%+v", r)
		}
		if r := v.remote(v.admin, "cron", "add", "bad", "--expr", "not cron", "--kind", "report"); r.code == 0 || !strings.Contains(r.stderr, "cron") {
			t.Fatalf("a bad expression: %+v", r)
		}
		v.same(t, "cron", "ls", "--json")
	}
	here["stint cron pause"] = func(t *testing.T) {
		if r := v.remote(v.admin, "cron", "pause", "nightly"); r.code != 0 {
			t.Fatalf("%+v", r)
		}
		if out := v.same(t, "cron", "ls"); !strings.Contains(out, "yes") {
			t.Fatalf("not paused:\n%s", out)
		}
	}
	here["stint cron resume"] = func(t *testing.T) {
		if r := v.remote(v.admin, "cron", "resume", "nightly"); r.code != 0 {
			t.Fatalf("%+v", r)
		}
		v.same(t, "cron", "ls")
	}
	here["stint cron ls"] = func(t *testing.T) { v.same(t, "cron", "ls") }
	here["stint cron rm"] = func(t *testing.T) {
		if r := v.remote(v.admin, "cron", "rm", "nightly"); r.code != 0 || r.stdout != "schedule nightly: deleted\n" {
			t.Fatalf("%+v", r)
		}
		r, l := v.remote(v.admin, "cron", "rm", "nightly"), v.local("cron", "rm", "nightly")
		if r.code != l.code || r.code != cli.ExitNotFound {
			t.Fatalf("removing it again: exit %d (%s) through the server, %d (%s) on the database", r.code, r.stderr, l.code, l.stderr)
		}
		v.same(t, "cron", "ls")
	}
	var made string
	here["stint tokens create"] = func(t *testing.T) {
		r := v.remote(v.admin, "tokens", "create", "--tenant", "acme", "--role", "client", "--name", "made-remotely")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "stint_") {
			t.Fatalf("%+v", r)
		}
		secret := strings.TrimSpace(r.stdout)
		if got := v.remote(secret, "jobs", "ls"); got.code != 0 {
			t.Fatalf("the token made through the server does not work: %+v", got)
		}
		made = strings.Fields(r.stderr)[2]
		made = strings.TrimSuffix(made, ":")
		v.same(t, "tokens", "ls")
	}
	here["stint tokens ls"] = func(t *testing.T) {
		v.same(t, "tokens", "ls")
		v.same(t, "tokens", "ls", "--tenant", "acme")
	}
	here["stint tokens revoke"] = func(t *testing.T) {
		if r := v.remote(v.admin, "tokens", "revoke", made); r.code != 0 || !strings.Contains(r.stdout, "revoked token "+made) {
			t.Fatalf("%+v", r)
		}
		v.same(t, "tokens", "ls")
	}

	// Run them in an order where each finds what it reads.
	order := []string{"stint enqueue", "stint jobs ls", "stint jobs show", "stint jobs events", "stint jobs signal", "stint jobs export-steps",
		"stint queues pause", "stint queues limit", "stint queues resume", "stint queues ls",
		"stint cron add", "stint cron pause", "stint cron resume", "stint cron ls", "stint cron rm",
		"stint tokens create", "stint tokens ls", "stint tokens revoke"}
	all := leaves(cli.NewRoot(cli.Env{Getenv: func(string) string { return "" }}))
	for _, path := range all {
		_, isHere := here[path]
		if !isHere && !slices.Contains(direct, path) && elsewhere[path] == "" {
			t.Errorf("%s is not placed: run it here through a server, or list it as needing direct database access", path)
		}
	}
	for _, path := range order {
		if !t.Run(path, here[path]) {
			return
		}
	}
	for _, path := range direct {
		t.Run(path, func(t *testing.T) {
			args := append(strings.Fields(path)[1:], "--help=false")
			r := v.remote(v.admin, args...)
			r.usageError(t, path+" needs direct database access (--db or --database-url), not --server: ")
		})
	}
}
