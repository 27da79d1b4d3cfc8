package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/sqlite"
)

// envStepsChild marks the worker process of TestStepsSIGKILL.
const envStepsChild = "STINT_E2E_STEPS_CHILD"

// envStepJobs sets how many demo.workflow jobs TestStepsSIGKILL runs
// (default 24; the target is 1000: STINT_E2E_STEP_JOBS=1000).
const envStepJobs = "STINT_E2E_STEP_JOBS"

// TestStepsHelperProcess is not a test: it is the worker process that
// TestStepsSIGKILL starts and kills, running the demo kinds with the
// maintenance services (one process at a time: no election) on the real
// clock. It exits when its stdin closes.
func TestStepsHelperProcess(t *testing.T) {
	if os.Getenv(envStepsChild) == "" {
		t.Skip("the worker process of TestStepsSIGKILL")
	}
	ctx := context.Background()
	s := openChildStore(ctx, 8)
	mux := stint.NewMux()
	demo.Register(mux, clock.System{})
	p, err := stint.NewPool(s, mux, stint.Config{WorkerID: "steps-" + strconv.Itoa(os.Getpid()), LeaseTTL: 2 * time.Second,
		Queues: map[string]int{"default": 16}, PollInterval: 50 * time.Millisecond, Logger: logger("steps-child"),
		Maintenance: &maintenance.Config{SingleNode: true}})
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestStepsSIGKILL kills worker processes with SIGKILL at random points of
// demo.workflow jobs (three steps, a durable sleep between steps 2 and 3),
// then lets a last worker finish them. Every job succeeds with its four
// step records; no step function ran again after its record committed (a
// step's runs are at most the attempts up to the one that recorded it, and
// exactly one when that was the first), and verify is clean.
func TestStepsSIGKILL(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		n := 24
		if v, err := strconv.Atoi(os.Getenv(envStepJobs)); err == nil && v > 0 {
			n = v
		}
		dir := t.TempDir()
		specs := make([]stint.Spec, n)
		for i := range specs {
			specs[i] = stint.Spec{Kind: demo.KindWorkflow, MaxAttempts: 100,
				Payload: json.RawMessage(fmt.Sprintf(`{"sleep_ms": %d, "log": %q}`, i%5*10, filepath.Join(dir, fmt.Sprintf("%d.log", i))))}
		}
		res, err := e.client.EnqueueMany(context.Background(), specs)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		kills := 0
		for round := 0; round < 3 && !allDone(t, e, res); round++ {
			c := startStepsChild(t, e)
			target := linesIn(dir) + 1 + rng.IntN(n)
			e.until("the child to run more steps", 0, func() bool { return linesIn(dir) >= target || allDone(t, e, res) })
			c.kill(t)
			kills++
		}
		last := startStepsChild(t, e)
		e.until("every workflow to succeed", 0, func() bool { return allDone(t, e, res) })
		_ = last.stdin.Close()
		_ = last.cmd.Wait()

		ss, err := store.Steps(e.s)
		if err != nil {
			t.Fatal(err)
		}
		extra := 0
		for i, r := range res {
			recs, err := ss.JobSteps(context.Background(), r.Job.ID)
			if err != nil || len(recs) != 4 {
				t.Fatalf("job %d: %d step records (%v), want 4", i, len(recs), err)
			}
			runs := stepRuns(t, filepath.Join(dir, fmt.Sprintf("%d.log", i)))
			for _, rec := range recs {
				if rec.Kind != store.StepRun {
					continue
				}
				got := runs[rec.Name]
				if got < 1 || got > rec.Attempt || (rec.Attempt == 1 && got != 1) {
					t.Errorf("job %d: %s ran %d times and was recorded by attempt %d", i, rec.Name, got, rec.Attempt)
				}
				extra += got - 1
			}
		}
		t.Logf("%d jobs, %d kills; %d step runs repeated because a kill came inside the step, before its record committed", n, kills, extra)
	})
}

// openChildStore opens, in a child process, the store its environment
// names, or exits.
func openChildStore(ctx context.Context, maxConns int32) store.Store {
	var s store.Store
	var err error
	if path := os.Getenv(envChildSQLite); path != "" {
		s, err = sqlite.OpenStore(ctx, path, sqlite.Options{})
	} else {
		s, err = postgres.OpenStore(ctx, os.Getenv(envChildPGURL), postgres.Options{Schema: os.Getenv(envChildPGSchema), MaxConns: maxConns})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open the store:", err)
		os.Exit(2)
	}
	return s
}

func startStepsChild(t *testing.T, e *env) *child {
	t.Helper()
	c := &child{log: filepath.Join(t.TempDir(), "child.log")}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestStepsHelperProcess$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), append(e.childEnv, envStepsChild+"=1")...)
	logFile, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	c.cmd.Stderr = logFile
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the child: %v", err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c
}

func allDone(t *testing.T, e *env, res []stint.EnqueueResult) bool {
	for _, r := range res {
		j := e.get(r.Job.ID)
		if j.State.Terminal() && j.State != stint.Succeeded {
			t.Fatalf("job %s ended %s: %+v", j.ID, j.State, j.Error)
		}
		if j.State != stint.Succeeded {
			return false
		}
	}
	return true
}

// linesIn counts the step lines in the logs of dir.
func linesIn(dir string) int {
	n := 0
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += bytes.Count(b, []byte("\n"))
	}
	return n
}

// stepRuns counts the lines of each step in a job's log.
func stepRuns(t *testing.T, path string) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out[line]++
	}
	return out
}
