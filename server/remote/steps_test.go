package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// Environment of a steps worker process started by TestRemoteSteps.
const (
	envStepsWorker = "STINT_TEST_STEPS_WORKER" // the server's URL
	envStepsToken  = "STINT_TEST_STEPS_TOKEN"
	envStepsLog    = "STINT_TEST_STEPS_LOG"  // file each step function run appends "ID stepK" to
	envStepsHold   = "STINT_TEST_STEPS_HOLD" // "1": after step one the handler prints "held ID" and blocks
)

// init runs the test binary as a steps worker when envStepsWorker is set
// (before TestMain, which belongs to the package's other process tests).
func init() {
	if url := os.Getenv(envStepsWorker); url != "" {
		os.Exit(stepsWorkerMain(url, os.Getenv(envStepsToken), os.Getenv(envStepsLog), os.Getenv(envStepsHold) == "1"))
	}
}

// stepsWorkerMain runs a stock stint.Pool on a remote store whose handler
// is a program of steps, a durable sleep and a wait for a signal. Its lease
// is short (5s), so the job of a killed worker comes back soon, but long
// enough that a loaded machine renews it in time.
func stepsWorkerMain(url, token, logPath string, hold bool) int {
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
	mux.HandleFunc("steps", func(ctx context.Context, j *stint.Job) error {
		run := func(k int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				_, err := fmt.Fprintf(log, "%s step%d\n", j.ID(), k)
				return k * 10, err
			}
		}
		a, err := stint.Step(ctx, j, "one", run(1))
		if err != nil {
			return err
		}
		if hold {
			fmt.Printf("held %s\n", j.ID())
			<-ctx.Done()
			return context.Cause(ctx)
		}
		b, err := stint.Step(ctx, j, "two", run(2))
		if err != nil {
			return err
		}
		if err := j.Sleep(ctx, "nap", 10*time.Millisecond); err != nil {
			return err
		}
		payload, received, err := j.WaitSignal(ctx, "go", time.Hour)
		if err != nil {
			return err
		}
		c, err := stint.Step(ctx, j, "three", run(3))
		if err != nil {
			return err
		}
		return j.SetResult(map[string]any{"sum": a + b + c, "signal": payload, "received": received})
	})
	pool, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"steps": 2}, LeaseTTL: 5 * time.Second,
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

// TestRemoteSteps: a Go pool on a remote store runs a multi-step job; its
// process is killed (SIGKILL) after the first step, and a second worker
// process replays it: no step function runs twice, the durable sleep and
// the wait for a signal hand the lease back over the API, a signal sent
// through the API wakes the job, and verify is clean.
func TestRemoteSteps(t *testing.T) {
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
			res, err := producer.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "steps", Queue: "steps"}}})
			if err != nil {
				t.Fatal(err)
			}
			id := res[0].Job.ID
			logPath := filepath.Join(t.TempDir(), "steps.log")
			start := func(hold bool) (*exec.Cmd, *bufio.Scanner) {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envStepsWorker+"="+url, envStepsToken+"="+worker, envStepsLog+"="+logPath)
				if hold {
					cmd.Env = append(cmd.Env, envStepsHold+"=1")
				}
				cmd.Stderr = os.Stderr
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
				return cmd, bufio.NewScanner(out)
			}

			// The first worker runs step one, then holds the job until it is
			// killed: no report, the lease simply lapses.
			first, out := start(true)
			if !out.Scan() || out.Text() != "held "+id {
				t.Fatalf("the first worker printed %q (%v), want %q", out.Text(), out.Err(), "held "+id)
			}
			if err := first.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = first.Wait()

			// The second one claims it when the lease has expired (the
			// server's reaper), replays step one and waits for the signal.
			start(false)
			waitFor(t, "the job waiting for its signal", func() bool {
				j, err := producer.JobGet(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				steps, err := producer.JobSteps(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				return j.State == lifecycle.Scheduled && len(steps) == 4 && steps[3].Kind == store.StepWait
			})
			if _, err := producer.JobSignal(t.Context(), &store.JobSignalParams{JobID: id, Name: "go", Payload: json.RawMessage(`{"n":12345678901234567}`)}); err != nil {
				t.Fatal(err)
			}
			waitState(t, producer, id, lifecycle.Succeeded)

			j, err := producer.JobGet(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var result struct {
				Sum      int             `json:"sum"`
				Signal   json.RawMessage `json:"signal"`
				Received bool            `json:"received"`
			}
			if err := json.Unmarshal(j.Result, &result); err != nil {
				t.Fatal(err)
			}
			if result.Sum != 60 || !result.Received || len(result.Signal) == 0 {
				t.Fatalf("result %s", j.Result)
			}
			steps, err := producer.JobSteps(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range steps {
				names = append(names, r.Kind+":"+r.Name)
			}
			if got, want := strings.Join(names, " "), "run:one run:two sleep:nap wait:go signal:go run:three"; got != want {
				t.Fatalf("steps %q, want %q", got, want)
			}
			// Step outputs cross the API as JSON text, byte for byte: a large
			// integer stays exact (a protobuf Value would make it a double).
			if got, want := string(steps[4].Output), `{"received":true,"payload":{"n":12345678901234567}}`; got != want {
				t.Fatalf("the signal's record %s, want %s", got, want)
			}
			if steps[0].Attempt != 1 || steps[1].Attempt < 2 {
				t.Fatalf("step one by attempt %d, step two by %d: want 1 and a later one", steps[0].Attempt, steps[1].Attempt)
			}
			data, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(data), fmt.Sprintf("%[1]s step1\n%[1]s step2\n%[1]s step3\n", id); got != want {
				t.Fatalf("step functions ran:\n%s\nwant each once:\n%s", got, want)
			}
			report, err := s.Verify(t.Context(), &store.VerifyParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(report.Findings) > 0 {
				t.Fatalf("verify: %v", report.Findings)
			}
		})
	}
}

// waitFor polls cond until it holds, failing after 60s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 60s", what)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
