package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// patience bounds how long a test waits for a condition: a guard against a
// hang, never a timing assertion.
const patience = time.Minute

// syncBuffer is a bytes.Buffer that a command may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually polls cond until it holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		<-tick.C
	}
}

// devRun is stint dev running in the background.
type devRun struct {
	out, errOut *syncBuffer
	cancel      context.CancelFunc
	done        chan int
}

func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &devRun{out: &syncBuffer{}, errOut: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	env := cli.Env{Stdout: d.out, Stderr: d.errOut, Getenv: func(string) string { return "" }}
	go func() { d.done <- cli.Main(ctx, args, env) }()
	t.Cleanup(func() {
		cancel()
		<-d.done
	})
	return d
}

// stop stops stint dev as Ctrl-C does and returns its exit code.
func (d *devRun) stop(t *testing.T) int {
	t.Helper()
	d.cancel()
	select {
	case code := <-d.done:
		d.done <- code // for the cleanup
		return code
	case <-time.After(patience):
		t.Fatalf("stint dev did not stop; output:\n%s", d.out.String())
		return -1
	}
}

// TestDev runs stint dev on a fresh database: it enqueues its demo jobs
// and works them to their ends, works jobs another process enqueues, and on
// Ctrl-C releases what is still running; afterwards nothing is claimed or
// running and every job's events replay to it.
func TestDev(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	d := startDev(t, "--db", db, "dev", "--shutdown-grace", "0")
	eventually(t, "the demo jobs to be enqueued", func() bool {
		return strings.Contains(d.out.String(), fmt.Sprintf("enqueued %d demo jobs", len(demo.Specs(""))))
	})

	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	res, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{
		{Kind: demo.KindSleep, Payload: json.RawMessage(`{"ms": 3600000}`)}, // still running at Ctrl-C
		{Kind: demo.KindFail, MaxAttempts: 2},
		{Kind: demo.KindSleep, Payload: json.RawMessage(`{"ms": 5}`)},
		{Kind: "not.a.demo.kind"}, // waits for a worker that knows it
	}})
	if err != nil {
		t.Fatal(err)
	}
	long, foreign := res[0].Job.ID, res[3].Job.ID

	var jobs []lifecycle.Job
	eventually(t, "every demo job to end but the long sleep, which runs", func() bool {
		jobs, err = st.JobList(ctx, &store.JobListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			switch j.ID {
			case long:
				if j.State != lifecycle.Running {
					return false
				}
			case foreign:
			default:
				if !j.State.Terminal() {
					return false
				}
			}
		}
		return len(jobs) == len(demo.Specs(""))+8 // the demo jobs, the demo run's 4, and the 4 above
	})
	runs, err := st.RunList(ctx, &store.RunListParams{})
	if err != nil || len(runs) != 1 || runs[0].State != lifecycle.RunSucceeded {
		t.Fatalf("the demo run: %+v %v", runs, err)
	}
	if code := d.stop(t); code != cli.ExitOK {
		t.Fatalf("stint dev exited %d; stderr %q", code, d.errOut.String())
	}

	want := map[string]lifecycle.State{
		demo.KindNoop: lifecycle.Succeeded, demo.KindFlaky: lifecycle.Succeeded, demo.KindProgress: lifecycle.Succeeded,
		demo.KindFail: lifecycle.DeadLettered, "not.a.demo.kind": lifecycle.Queued, demo.KindWorkflow: lifecycle.Succeeded,
	}
	jobs, err = st.JobList(ctx, &store.JobListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		switch {
		case j.ID == long:
			if j.State != lifecycle.Queued || j.Attempt != 1 {
				t.Errorf("the job running at Ctrl-C is %s after %d attempts, want queued (released) after 1", j.State, j.Attempt)
			}
		case j.Kind == demo.KindSleep:
			if j.State != lifecycle.Succeeded {
				t.Errorf("%s %s is %s, want succeeded", j.Kind, j.ID, j.State)
			}
		case j.State != want[j.Kind]:
			t.Errorf("%s %s is %s, want %s", j.Kind, j.ID, j.State, want[j.Kind])
		}
		if j.Kind == demo.KindFlaky && j.Attempt != 3 {
			t.Errorf("demo.flaky succeeded on attempt %d, want 3", j.Attempt)
		}
	}
	held, err := st.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested, lifecycle.Stalled}})
	if err != nil || len(held) > 0 {
		t.Errorf("after stint dev stopped, %d jobs are still held or stalled (%v)", len(held), err)
	}
	rep, err := st.Verify(ctx, &store.VerifyParams{})
	if err != nil || len(rep.Findings) > 0 {
		t.Errorf("verify: %v %+v", err, rep.Findings)
	}

	out := d.out.String()
	for _, line := range []string{
		"stint dev on SQLite " + db,
		"--kind demo.sleep --payload '{\"ms\":500}'",
		"dlq ls --db " + db,
		"maintenance: this process leads",
		"succeeded ",
		"failed    ",
		"(its last attempt: see `dlq ls`)",
		"stopped   " + long,
		"stopped after",
		"stint runs show ",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
	}
	if d.errOut.String() != "" {
		t.Errorf("stderr: %q", d.errOut.String())
	}
}

// TestDevKeepsAnExistingDatabase checks that dev enqueues no demo jobs on a
// database that has jobs, unless told to, and that it works the queues it
// is given.
func TestDevKeepsAnExistingDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var id string
	withStore(t, db, func(ctx context.Context, st store.Store) {
		id = mustEnqueue(t, st, lifecycle.Spec{Kind: demo.KindNoop, Queue: "batch"}).ID
	})
	d := startDev(t, "--db", db, "dev", "--queues", "default,batch=2")
	eventually(t, "the job in queue batch to succeed", func() bool {
		return strings.Contains(d.out.String(), "succeeded "+id)
	})
	if code := d.stop(t); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, d.errOut.String())
	}
	out := d.out.String()
	if strings.Contains(out, "enqueued") {
		t.Errorf("dev enqueued demo jobs into a database that had jobs:\n%s", out)
	}
	if !strings.Contains(out, "default (100 workers), batch (2 workers)") {
		t.Errorf("the banner does not name the queues:\n%s", out)
	}
}

func TestDevBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"workers zero", []string{"--queues", "default=0"}, `the workers of queue "default" are "0"`},
		{"workers not a number", []string{"--queues", "a=many"}, `expected an integer from 1 to 10000`},
		{"empty queue name", []string{"--queues", "a,,b"}, "has an empty queue name"},
		{"queue twice", []string{"--queues", "a,a=3"}, `names queue "a" twice`},
		{"concurrency zero", []string{"--concurrency", "0"}, "expected an integer from 1 to 10000"},
		{"stray argument", []string{"now"}, `unknown command "now" for "stint dev"`},
		{"negative grace", []string{"--shutdown-grace", "-1s"}, "expected a non-negative duration"},
		{"admission file missing", []string{"--admission", filepath.Join(dir, "none.json")}, "--admission: open"},
		{"admission not json", []string{"--admission", file("bad.json", "{rules")}, "admission rules:"},
		{"admission unknown field", []string{"--admission", file("field.json", `{"rules":[{"tenant":"a","max_jobs":3}]}`)}, `unknown field "max_jobs"`},
		{"admission negative", []string{"--admission", file("neg.json", `{"rules":[{"max_live_jobs":-1}]}`)}, "admission rule 1: invalid request: max_live_jobs -1"},
		{"admission limits nothing", []string{"--admission", file("none2.json", `{"rules":[{"tenant":"a"}]}`)}, "the rule limits nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			stint(t, db, append([]string{"dev"}, tt.args...)...).usageError(t, tt.want)
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("bad input created the database (%v)", err)
			}
		})
	}
}
