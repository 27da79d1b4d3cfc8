package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// execScript behaves by the payload's mode: ok prints a JSON result and
// its job id; fail3 exits 3; retry75 exits 75; sleep starts a child in its
// process group, records the child's pid and waits.
const execScript = `read -r p || true
case "$p" in
*'"ok"'*) echo "{\"job\":\"$STINT_JOB_ID\",\"attempt\":$STINT_ATTEMPT,\"fenced\":\"${STINT_FENCING_TOKEN:+yes}\"}" ;;
*'"fail3"'*) echo boom >&2; exit 3 ;;
*'"retry75"'*) exit 75 ;;
*'"talk"'*) echo to-stdout; echo to-stderr >&2 ;;
*'"sleep"'*) sleep 300 & echo $! > "$PIDFILE"; wait ;;
esac`

// TestWorkerExec runs `stint worker --exec` on a SQLite file: a command that
// succeeds completes the job with its JSON stdout; exit 3 (not a retry code)
// fails it at once with exit_3; exit 75 is retried until the attempts run
// out; a cancel kills the command's whole process group.
func TestWorkerExec(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	enqueue := func(mode string, attempts int) string {
		res, err := st.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{
			Kind: "exec", Queue: "ci", MaxAttempts: attempts, Payload: json.RawMessage(`{"mode":"` + mode + `"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Job.ID
	}
	// The scheduler promotes retries; a server runs it, here the test does.
	m, err := maintenance.New(st, &maintenance.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	ok, fail3, retry75, sleeper, talk := enqueue("ok", 3), enqueue("fail3", 3), enqueue("retry75", 2), enqueue("sleep", 1), enqueue("talk", 1)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errs syncBuffer
	go func() {
		done <- cli.Main(ctx, []string{"worker", "--db", db, "--queues", "ci=4", "--kinds", "exec", "--retry-exit-codes", "75",
			"--lease-ttl", "3s", "--kill-grace", "5s", "--exec", "--", "sh", "-c", strings.ReplaceAll(execScript, "$PIDFILE", pidfile)}, cli.Env{Stdout: &out, Stderr: &errs})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint worker exited %d: %s", code, errs.String())
		}
	}()

	wait := func(t *testing.T, id string, want lifecycle.State) lifecycle.Job {
		t.Helper()
		deadline := time.Now().Add(patience)
		for {
			j, err := st.JobGet(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == want {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("job is %s, want %s; worker said:\n%s", j.State, want, errs.String())
			}
			tick(t)
		}
	}
	t.Run("exit 0 completes with stdout", func(t *testing.T) {
		j := wait(t, ok, lifecycle.Succeeded)
		var r struct {
			Job     string `json:"job"`
			Attempt int    `json:"attempt"`
			Fenced  string `json:"fenced"`
		}
		if err := json.Unmarshal(j.Result, &r); err != nil || r.Job != ok || r.Attempt != 1 || r.Fenced != "yes" {
			t.Fatalf("result %s (%v)", j.Result, err)
		}
	})
	t.Run("output is kept for jobs logs", func(t *testing.T) {
		j := wait(t, talk, lifecycle.Succeeded)
		if !strings.Contains(string(j.Result), `"output":"to-stdout\n"`) {
			t.Fatalf("result %s", j.Result)
		}
		var logs syncBuffer
		if code := cli.Main(context.Background(), []string{"--db", db, "jobs", "logs", talk}, cli.Env{Stdout: &logs, Stderr: &logs}); code != 0 {
			t.Fatalf("jobs logs: exit %d: %s", code, logs.String())
		}
		if got := logs.String(); !strings.Contains(got, "to-stdout\n") || !strings.Contains(got, "to-stderr\n") {
			t.Fatalf("jobs logs printed %q", got)
		}
	})
	t.Run("exit 3 fails at once", func(t *testing.T) {
		j := wait(t, fail3, lifecycle.Failed)
		if j.Error == nil || j.Error.Code != "exit_3" || !strings.Contains(j.Error.Message, "boom") || j.Attempt != 1 {
			t.Fatalf("error %+v after %d attempts", j.Error, j.Attempt)
		}
	})
	t.Run("exit 75 is retried", func(t *testing.T) {
		j := wait(t, retry75, lifecycle.DeadLettered)
		if j.Attempt != 2 || j.LastError == nil || j.LastError.Code != "exit_75" {
			t.Fatalf("attempts %d last error %+v", j.Attempt, j.LastError)
		}
	})
	t.Run("cancel kills the process group", func(t *testing.T) {
		wait(t, sleeper, lifecycle.Running)
		var pid int
		for deadline := time.Now().Add(patience); pid == 0; tick(t) {
			b, _ := os.ReadFile(pidfile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			if time.Now().After(deadline) {
				t.Fatal("the command never recorded its child")
			}
		}
		if _, err := st.JobCancel(t.Context(), &store.JobCancelParams{JobID: sleeper, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		wait(t, sleeper, lifecycle.Cancelled)
		for deadline := time.Now().Add(patience); alive(pid); tick(t) {
			if time.Now().After(deadline) {
				t.Fatalf("the command's child %d survived the cancel", pid)
			}
		}
	})
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) < 3 || fields[2] != "Z"
}

// tick paces a poll loop (the loops poll with a deadline, never assert time).
func tick(t *testing.T) {
	select {
	case <-t.Context().Done():
	case <-time.After(10 * time.Millisecond):
	}
}
