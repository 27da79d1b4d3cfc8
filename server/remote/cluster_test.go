package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// envServer makes the test binary run `stint` with the arguments in it
// (separated by spaces): a real server process for TestClusterFailover.
const envServer = "STINT_TEST_STINT_ARGS"

func init() {
	if args := os.Getenv(envServer); args != "" {
		os.Exit(cli.Main(context.Background(), strings.Fields(args), cli.Env{}))
	}
}

// startServer starts `stint server` in its own process and returns its URL
// and the process.
func startServer(t *testing.T, dbURL, schema string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServer+"=server --listen 127.0.0.1:0 --database-url "+dbURL+" --schema "+schema)
	cmd.Stderr = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "stint server listening on "); ok {
			go func() { // keep draining, so the server never blocks on its output
				for sc.Scan() {
				}
			}()
			return url, cmd
		}
	}
	t.Fatalf("stint server exited before listening: %v", sc.Err())
	return "", nil
}

// TestClusterFailover: two `stint server` processes on one PostgreSQL
// database; remote worker processes know both. One server is killed with
// SIGKILL mid-batch: the workers carry on through the other and nothing is
// lost or run twice within an attempt.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts server and worker processes")
	}
	s, dbURL, schema, token := newCluster(t)
	client, worker := token(store.RoleClient), token(store.RoleWorker)
	url1, srv1 := startServer(t, dbURL, schema)
	url2, _ := startServer(t, dbURL, schema)
	urls := url1 + "," + url2

	producer, err := remote.New(remote.Options{URL: urls, Token: client})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "executions.log")
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+urls, envToken+"="+worker, envLog+"="+logPath)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	}

	enqueue := func(n int) []string {
		specs := make([]lifecycle.Spec, n)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: "count", Queue: "work", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		}
		res, err := producer.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, n)
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		return ids
	}
	first := enqueue(30)
	for _, id := range first {
		waitState(t, s, id, lifecycle.Succeeded)
	}
	if err := srv1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := enqueue(30) // the producer moves to the live server too
	for _, id := range append(first, second...) {
		waitState(t, s, id, lifecycle.Succeeded)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		runs[line]++
	}
	for run, n := range runs {
		if n != 1 {
			t.Errorf("execution %q happened %d times", run, n)
		}
	}
}

// newCluster makes a fresh PostgreSQL schema for servers to share, and
// returns a store on it, where it is, and a function that makes a token of
// tenant acme there.
func newCluster(t *testing.T) (store.Store, string, string, func(store.Role) string) {
	t.Helper()
	dbURL, schema := pgtest.URL(t), pgtest.NewSchema(t)
	s, err := postgres.OpenStore(t.Context(), dbURL, postgres.Options{Schema: schema, Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	keeper, err := store.TokensOf(s)
	if err != nil {
		t.Fatal(err)
	}
	token := func(role store.Role) string {
		tok, secret, err := server.NewToken("acme", role, string(role))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keeper.TokenCreate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	return s, dbURL, schema, token
}
