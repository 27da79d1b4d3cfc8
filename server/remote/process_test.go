package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// Environment of a worker process started by TestRemoteWorkers: the test
// binary runs itself as a remote worker when envWorker is set.
const (
	envWorker = "STINT_TEST_REMOTE_WORKER" // the server's URL
	envToken  = "STINT_TEST_REMOTE_TOKEN"
	envLog    = "STINT_TEST_REMOTE_LOG"   // file each execution appends "id attempt" to
	envLease  = "STINT_TEST_REMOTE_LEASE" // the pool's lease TTL, when set
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envWorker); url != "" {
		os.Exit(workerMain(url, os.Getenv(envToken), os.Getenv(envLog)))
	}
	os.Exit(m.Run())
}

// workerMain runs a stock stint.Pool on a remote store until stdin closes.
// Its handler records every execution, and fails the first attempt of jobs
// whose payload asks for it.
func workerMain(url, token, logPath string) int {
	log, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	st, err := remote.New(remote.Options{URL: url, Token: token})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	mux := stint.NewMux()
	mux.HandleFunc("count", func(ctx context.Context, j *stint.Job) error {
		// One write per line: O_APPEND keeps concurrent lines whole.
		if _, err := fmt.Fprintf(log, "%s %d\n", j.ID(), j.Attempt()); err != nil {
			return err
		}
		if strings.Contains(string(j.Payload()), `"flaky":true`) && j.Attempt() == 1 {
			return stint.RetryAfter(time.Millisecond, errors.New("flaky on purpose"))
		}
		return nil
	})
	lease, _ := time.ParseDuration(os.Getenv(envLease))
	pool, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"work": 4}, LeaseTTL: lease,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := pool.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes our stdin
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pool.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var backends = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T) store.Store { return pgtest.NewStore(t) }},
}

// serve runs the API and the maintenance services on s, and returns the
// URL and a worker token of tenant acme.
func serve(t *testing.T, s store.Store) (url, client, worker string) {
	t.Helper()
	h, err := server.New(server.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	m, err := maintenance.New(s, &maintenance.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	keeper, err := store.TokensOf(s)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(role store.Role) string {
		tok, sec, err := server.NewToken("acme", role, "acme-"+string(role))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keeper.TokenCreate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		return sec
	}
	return srv.URL, secret(store.RoleClient), secret(store.RoleWorker)
}

// dial opens a remote store on url with token, closed at cleanup.
func dial(t *testing.T, url, token string) *remote.Store {
	t.Helper()
	st, err := remote.New(remote.Options{URL: url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestRemoteWorkers: three worker processes, each a stock stint.Pool on a
// remote store, finish a batch through one server; every (job, attempt) runs
// exactly once, and the flaky jobs run exactly twice.
func TestRemoteWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			url, client, worker := serve(t, s)
			producer := dial(t, url, client)
			const n, flakyEvery = 60, 5
			specs := make([]lifecycle.Spec, n)
			for i := range specs {
				specs[i] = lifecycle.Spec{Kind: "count", Queue: "work", Payload: []byte(fmt.Sprintf(`{"i":%d,"flaky":%v}`, i, i%flakyEvery == 0))}
			}
			res, err := producer.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
			if err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(t.TempDir(), "executions.log")
			var procs []*exec.Cmd
			for range 3 {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envWorker+"="+url, envToken+"="+worker, envLog+"="+logPath)
				cmd.Stderr = os.Stderr
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				procs = append(procs, cmd)
				t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
			}

			// Wait, with a deadline, until every job succeeded.
			for _, r := range res {
				waitState(t, producer, r.Job.ID, lifecycle.Succeeded)
			}
			runs := map[string]int{}
			f, err := os.Open(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				runs[sc.Text()]++
			}
			for i, r := range res {
				want := 1
				if i%flakyEvery == 0 {
					want = 2
				}
				for a := 1; a <= want; a++ {
					if got := runs[fmt.Sprintf("%s %d", r.Job.ID, a)]; got != 1 {
						t.Errorf("job %d attempt %d ran %d times, want once", i, a, got)
					}
				}
			}
			if want := n + n/flakyEvery; len(runs) != want {
				t.Errorf("%d distinct executions, want %d", len(runs), want)
			}
		})
	}
}

// waitState polls the job until it is in want, failing after 60s.
func waitState(t *testing.T, s store.Store, id string, want lifecycle.State) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, err := s.JobGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 60s, want %s", id, j.State, want)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
