package cli_test

import (
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/store"
)

// TestReaderToken: `stint tokens create --role reader` works on the
// database and through the server (by an admin); the reader's token then
// reads jobs and queues through the server as the admin sees them, and
// every change it tries is refused naming the role it needs, changing
// nothing.
func TestReaderToken(t *testing.T) {
	t.Parallel()
	v := newViaServer(t)
	db, srv, st := v.db, v.url, v.st
	stint := func(args ...string) (string, string, int) {
		r := v.run(args...)
		return r.stdout, r.stderr, r.code
	}
	admin, errs, code := stint("--db", db, "tokens", "create", "--role", "admin")
	if code != 0 {
		t.Fatalf("create an admin: exit %d: %s", code, errs)
	}
	local, errs, code := stint("--db", db, "tokens", "create", "--role", "reader", "--name", "audit")
	if code != 0 || !strings.Contains(errs, "role reader") {
		t.Fatalf("create a reader on the database: exit %d: %s", code, errs)
	}
	as := func(secret string, args ...string) (string, string, int) {
		return stint(append([]string{"--server", srv, "--token", strings.TrimSpace(secret)}, args...)...)
	}
	remote, errs, code := as(admin, "tokens", "create", "--role", "reader", "--name", "audit2")
	if code != 0 || !strings.HasPrefix(remote, "stint_") {
		t.Fatalf("create a reader through the server: exit %d: %s", code, errs)
	}
	if ls, errs, code := as(admin, "tokens", "ls"); code != 0 || strings.Count(ls, "reader") != 2 {
		t.Fatalf("tokens ls: exit %d: %s\n%s", code, errs, ls)
	}
	out, errs, code := as(admin, "enqueue", "--kind", "k", "--queue", "q", "--json")
	if code != 0 {
		t.Fatalf("enqueue as the admin: exit %d: %s", code, errs)
	}
	id := jsonField(t, out, "id")
	for _, reader := range []string{local, remote} {
		for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "show", id}, {"jobs", "events", id}, {"queues", "ls"}, {"dlq", "ls"}} {
			t.Run("read "+strings.Join(args, " "), func(t *testing.T) {
				r, rerr, rcode := as(reader, args...)
				a, aerr, acode := as(admin, args...)
				if rcode != 0 || acode != 0 || r != a {
					t.Fatalf("as a reader (exit %d, %s):\n%s\nas an admin (exit %d, %s):\n%s", rcode, rerr, r, acode, aerr, a)
				}
			})
		}
		for _, args := range [][]string{{"enqueue", "--kind", "k", "--queue", "q"}, {"jobs", "cancel", id}, {"queues", "pause", "q"},
			{"queues", "limit", "q", "--max-running", "1"}, {"tokens", "create", "--role", "admin"}, {"tokens", "ls"}} {
			t.Run("refused "+strings.Join(args, " "), func(t *testing.T) {
				_, errs, code := as(reader, args...)
				if code == 0 || !strings.Contains(errs, "reader token may not") || !strings.Contains(errs, "it needs an admin") {
					t.Fatalf("exit %d: %s", code, errs)
				}
			})
		}
	}
	if j, err := st.JobGet(t.Context(), id); err != nil || j.State != "queued" {
		t.Fatalf("the job is %s (%v) after the reader's tries", j.State, err)
	}
	if n, _ := st.JobList(t.Context(), &store.JobListParams{Limit: 10}); len(n) != 1 {
		t.Fatalf("%d jobs after the reader's tries, want 1", len(n))
	}
	if qs, _ := store.Queues(st); qs != nil {
		set, _ := qs.QueueSettingsList(t.Context())
		if len(set) != 0 {
			t.Fatalf("the reader changed queue settings: %+v", set)
		}
	}
	if _, errs, code := stint("--db", db, "tokens", "create", "--role", "root"); code != cli.ExitUsage || !strings.Contains(errs, store.Roles) {
		t.Fatalf("bad role: exit %d: %s", code, errs)
	}
}
