package cron_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestCronHelperProcess is not a test: it is one node (a Maintainer, which
// runs the cron service while it leads) in a child process of
// TestCronFailoverProcesses. It prints "LEADER <id>" when elected and stops
// when its stdin closes; the parent kills one with SIGKILL.
func TestCronHelperProcess(t *testing.T) {
	id := os.Getenv("STINT_CRON_HELPER_ID")
	if id == "" {
		t.Skip("a child process of TestCronFailoverProcesses")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		stop()
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("id", id)
	var s store.Store
	var err error
	if path := os.Getenv("STINT_CRON_HELPER_SQLITE"); path != "" {
		s, err = sqlite.OpenStore(ctx, path, sqlite.Options{})
	} else {
		s, err = postgres.OpenStore(ctx, os.Getenv("STINT_CRON_HELPER_POSTGRES"), postgres.Options{Schema: os.Getenv("STINT_CRON_HELPER_SCHEMA")})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	m, err := maintenance.New(s, &maintenance.Config{Logger: logger,
		Cron: cron.Config{Interval: 100 * time.Millisecond},
		Election: maintenance.ElectorConfig{ID: id, TTL: time.Second, OnChange: func(c maintenance.LeaderChange) {
			if c.Leader {
				fmt.Printf("LEADER %s\n", c.ID)
			}
		}}})
	if err == nil {
		err = m.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Minute): // never outlive a stuck parent
	}
	m.Stop()
	_ = s.Close()
	os.Exit(0)
}

// TestCronFailoverProcesses runs three nodes as processes on one database
// with a schedule ticking every two seconds, kills the leader with SIGKILL
// between ticks, and checks that every tick from the first to the last was
// enqueued exactly once: the failover neither doubled nor skipped one.
func TestCronFailoverProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes on the real clock for several seconds")
	}
	t.Parallel()
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			var env []string
			var s store.Store
			var err error
			if b == "sqlite" {
				path := filepath.Join(t.TempDir(), "stint.db")
				env = []string{"STINT_CRON_HELPER_SQLITE=" + path}
				s, err = sqlite.OpenStore(t.Context(), path, sqlite.Options{})
			} else {
				schema := pgtest.NewSchema(t)
				env = []string{"STINT_CRON_HELPER_POSTGRES=" + pgtest.URL(t), "STINT_CRON_HELPER_SCHEMA=" + schema}
				s, err = postgres.OpenStore(t.Context(), pgtest.URL(t), postgres.Options{Schema: schema})
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := cron.Declare(t.Context(), s, store.Schedule{Name: "tick", Expr: "*/2 * * * * *", Kind: "tick"}); err != nil {
				t.Fatal(err)
			}
			leaders := make(chan string, 16)
			procs := map[string]*exec.Cmd{}
			for i := range 3 {
				id := fmt.Sprintf("node-%d", i)
				procs[id] = spawn(t, env, id, leaders)
			}
			first := recvLeader(t, leaders)
			n := waitJobs(t, s, 2)
			// Kill the leader right after a tick fired, well before the next.
			if err := procs[first].Process.Kill(); err != nil {
				t.Fatal(err)
			}
			second := recvLeader(t, leaders)
			if second == first {
				t.Fatalf("%s was killed but leads again", first)
			}
			waitJobs(t, s, n+3)
			for _, p := range procs {
				_ = p.Process.Signal(syscall.SIGTERM)
			}
			for _, p := range procs {
				_ = p.Wait()
			}
			var ticks []time.Time
			for _, j := range listJobs(t, s) {
				at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(j.DedupeKey, "cron:tick:"))
				if err != nil {
					t.Fatalf("job %s has dedupe key %q", j.ID, j.DedupeKey)
				}
				ticks = append(ticks, at)
			}
			slices.SortFunc(ticks, func(a, b time.Time) int { return a.Compare(b) })
			for i := 1; i < len(ticks); i++ {
				if d := ticks[i].Sub(ticks[i-1]); d != 2*time.Second {
					t.Fatalf("ticks %s and %s are %s apart, want 2s (a doubled or skipped tick): %v", ticks[i-1], ticks[i], d, ticks)
				}
			}
			verifyClean(t, s)
		})
	}
}

func spawn(t *testing.T, env []string, id string, leaders chan<- string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCronHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, "STINT_CRON_HELPER_ID="+id)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "LEADER "); ok {
				leaders <- id
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("log of %s:\n%s", id, b)
		}
	})
	return cmd
}

func recvLeader(t *testing.T, leaders <-chan string) string {
	t.Helper()
	select {
	case id := <-leaders:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no process was elected within 30s")
		return ""
	}
}

// waitJobs polls until s holds at least n jobs, and returns how many it holds.
func waitJobs(t *testing.T, s store.Store, n int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := len(listJobs(t, s)); got >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d jobs after 30s", n)
		}
		select {
		case <-time.After(20 * time.Millisecond): // polling with a deadline
		case <-t.Context().Done():
			t.FailNow()
		}
	}
}
