package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// envGoWorker makes the test binary run the Go scenario worker.
const envGoWorker = "STINT_CONFORMANCE_GO_WORKER"

// goWorker is the Go side of the scenarios: a stock stint.Pool on a remote
// store, with the handlers and settings doc.go describes.
func goWorker(url, token, queue string) int {
	st, err := remote.New(remote.Options{URL: url, Token: token})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	var released sync.Map
	mux := stint.NewMux()
	mux.HandleFunc("echo", func(_ context.Context, j *stint.Job) error {
		var payload map[string]any
		if err := j.Decode(&payload); err != nil {
			return err
		}
		return j.SetResult(map[string]any{"echo": payload, "lang": "go", "attempt": j.Attempt()})
	})
	mux.HandleFunc("flaky", func(_ context.Context, j *stint.Job) error {
		var p struct {
			Fail         int `json:"fail"`
			RetryAfterMs int `json:"retryAfterMs"`
		}
		if err := j.Decode(&p); err != nil {
			return err
		}
		if j.Attempt() <= p.Fail {
			return stint.WithCode("flaky", fmt.Errorf("attempt %d fails on purpose", j.Attempt()))
		}
		if p.RetryAfterMs > 0 && j.Attempt() == 1 {
			return stint.RetryAfter(time.Duration(p.RetryAfterMs)*time.Millisecond, errors.New("retry later"))
		}
		return j.SetResult(map[string]any{"attempt": j.Attempt()})
	})
	mux.HandleFunc("block", func(ctx context.Context, j *stint.Job) error {
		say("started %s", j.ID())
		<-ctx.Done()
		cause := context.Cause(ctx)
		say("aborted %s %s", j.ID(), reasonName(cause))
		return cause
	})
	mux.HandleFunc("stale", func(ctx context.Context, j *stint.Job) error {
		if _, again := released.LoadOrStore(j.ID(), true); again {
			return j.SetResult("second")
		}
		f := j.Fence()
		if _, err := st.JobRelease(ctx, &store.JobReleaseParams{OwnerParams: store.OwnerParams{JobID: f.JobID, LeaseID: f.LeaseID}, Requeue: true, Reason: "conformance: the lease goes stale"}); err != nil {
			return err
		}
		return j.SetResult("first")
	})
	mux.HandleFunc("steps", func(ctx context.Context, j *stint.Job) error {
		one, err := stint.Step(ctx, j, "one", func(context.Context) (int, error) { say("ran %s one", j.ID()); return 1, nil })
		if err != nil {
			return err
		}
		payload, received, err := j.WaitSignal(ctx, "go", time.Hour)
		if err != nil {
			return err
		}
		if err := j.Sleep(ctx, "nap", 10*time.Millisecond); err != nil {
			return err
		}
		two, err := stint.Step(ctx, j, "two", func(context.Context) (int, error) { say("ran %s two", j.ID()); return one + 1, nil })
		if err != nil {
			return err
		}
		return j.SetResult(map[string]any{"one": one, "two": two, "received": received, "payload": payload, "lang": "go"})
	})
	cfg := stint.Config{
		Queues: map[string]int{queue: 4}, LeaseTTL: 10 * time.Minute, ShutdownGrace: -1, NoMaintenance: true,
		OnOutcome: func(o stint.Outcome) {
			if o.Err != nil && o.Op != "" {
				say("rejected %s %s", o.Job.ID, kindOf(o.Err))
			}
		},
	}
	benchMode(mux, &cfg, say)
	pool, err := stint.NewPool(st, mux, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := pool.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := pool.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	say("stopped")
	return 0
}

func reasonName(cause error) string {
	for _, r := range []struct {
		err  error
		name string
	}{{stint.ErrCancelRequested, "cancel"}, {stint.ErrShutdown, "shutdown"}, {stint.ErrLeaseLost, "lease_lost"},
		{stint.ErrTimeout, "timeout"}, {stint.ErrDeadline, "deadline"}} {
		if errors.Is(cause, r.err) {
			return r.name
		}
	}
	return "unknown"
}

func kindOf(err error) string {
	switch {
	case errors.Is(err, store.ErrStaleLease):
		return "stale_lease"
	case errors.Is(err, store.ErrInvalidTransition):
		return "invalid_transition"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// benchMode, in the Go scenario worker, adds a no-op handler and prints
// "benched" once n completions were accepted (STINT_BENCH=n).
func benchMode(mux *stint.Mux, cfg *stint.Config, say func(string, ...any)) {
	n, _ := strconv.Atoi(os.Getenv("STINT_BENCH"))
	if c, _ := strconv.Atoi(os.Getenv("STINT_CONCURRENCY")); c > 0 {
		for q := range cfg.Queues {
			cfg.Queues[q] = c
		}
	}
	mux.HandleFunc("noop", func(context.Context, *stint.Job) error { return nil })
	if n == 0 {
		return
	}
	var done atomic.Int64
	prev := cfg.OnOutcome
	cfg.OnOutcome = func(o stint.Outcome) {
		prev(o)
		if o.Err == nil && o.Op == "complete" && done.Add(1) == int64(n) {
			say("benched")
		}
	}
}
