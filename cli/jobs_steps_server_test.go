package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
)

// TestJobsStepsThroughServer: jobs export-steps, jobs show and jobs signal
// through a real `stint server` print what they print on its database, and
// refuse what they refuse there.
func TestJobsStepsThroughServer(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	id := jobWithSteps(t, db)
	url := startServerOn(t, db)
	remote := func(args ...string) result {
		return stintEnv(t, cli.Env{}, append([]string{"--server", url}, args...)...)
	}

	for _, args := range [][]string{{"jobs", "export-steps", id}, {"jobs", "show", id, "--json"}} {
		r, l := remote(args...).ok(t), stint(t, db, args...).ok(t)
		if r.stdout != l.stdout {
			t.Errorf("%v through the server:\n%s\non the database:\n%s", args, r.stdout, l.stdout)
		}
	}
	if out := remote("jobs", "signal", id, "approve", "--payload", `{"by":"ada"}`).ok(t).stdout; !strings.Contains(out, `"ada"`) {
		t.Errorf("signal printed %s", out)
	}
	remote("jobs", "signal", id, "approve").failed(t, cli.ExitUsage, "first one wins")
	stint(t, db, "jobs", "signal", id, "approve").failed(t, cli.ExitUsage, "first one wins")
	remote("jobs", "signal", id, "x", "--payload", "{").usageError(t, "--payload")
	remote("jobs", "signal", "no-such-job", "x").notFound(t, "no-such-job")
	remote("jobs", "export-steps", "no-such-job").notFound(t, "no-such-job")
}

// startServerOn runs `stint server --no-auth` on the database db until the
// test ends and returns its URL.
func startServerOn(t *testing.T, db string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--db", db, "server", "--listen", "127.0.0.1:0", "--no-auth"},
			cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint server exited %d: %s", code, errs.String())
		}
	})
	var url string
	eventually(t, "the server to listen", func() bool {
		url, _ = strings.CutPrefix(strings.TrimSpace(out.String()), "stint server listening on ")
		return url != ""
	})
	return url
}
