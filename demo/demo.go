package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
)

// The demo kinds.
const (
	// KindNoop succeeds at once.
	KindNoop = "demo.noop"
	// KindSleep sleeps for the payload's "ms" (default 200) and succeeds;
	// it stops early when its context is cancelled.
	KindSleep = "demo.sleep"
	// KindFlaky fails its first "failures" attempts (default 2), then
	// succeeds: with the default 3 attempts it shows two retries.
	KindFlaky = "demo.flaky"
	// KindFail fails every attempt, so it ends in the dead-letter queue
	// (reason exhausted_retries) once its attempts are used up.
	KindFail = "demo.fail"
	// KindProgress works "steps" steps (default 5) of "ms" each (default
	// 200), checkpointing and reporting progress after each; a retry
	// resumes after the last checkpoint, and a step budget halts it.
	KindProgress = "demo.progress"
)

// Kinds lists the demo kinds, sorted.
var Kinds = []string{KindFail, KindFlaky, KindNoop, KindProgress, KindSleep, KindWorkflow}

// Defaults of the payload fields.
const (
	DefaultSleep    = 200 * time.Millisecond
	DefaultFailures = 2
	DefaultSteps    = 5
	// MaxSleep bounds a sleep or a step, so a typo cannot hold a worker for a day.
	MaxSleep = time.Hour
)

// Register adds the demo kinds to mux. c times the sleeps.
func Register(mux *stint.Mux, c clock.Clock) {
	if c == nil {
		c = clock.System{}
	}
	h := handlers{clock: c}
	mux.HandleFunc(KindNoop, h.noop)
	mux.HandleFunc(KindSleep, h.sleep)
	mux.HandleFunc(KindFlaky, h.flaky)
	mux.HandleFunc(KindFail, h.fail)
	mux.HandleFunc(KindProgress, h.progress)
	mux.HandleFunc(KindWorkflow, h.workflow) // workflow.go
}

// Specs returns a set of demo jobs in queue (empty: the default queue)
// that together end in every common outcome: succeeded (after sleeping,
// after retries, after progress), and dead-lettered.
func Specs(queue string) []stint.Spec {
	spec := func(kind, payload string) stint.Spec {
		s := stint.Spec{Kind: kind, Queue: queue}
		if payload != "" {
			s.Payload = json.RawMessage(payload)
		}
		return s
	}
	return []stint.Spec{
		spec(KindNoop, ""),
		spec(KindSleep, `{"ms": 300}`),
		spec(KindSleep, `{"ms": 1000}`),
		spec(KindFlaky, `{"failures": 2}`),
		spec(KindFail, ""),
		spec(KindProgress, `{"steps": 5, "ms": 200}`),
		spec(KindWorkflow, `{"sleep_ms": 500}`),
	}
}

type handlers struct{ clock clock.Clock }

// payload is every field the demo kinds read; each reads its own.
type payload struct {
	MS       *int64 `json:"ms"`
	Failures *int   `json:"failures"`
	Steps    *int   `json:"steps"`
}

// decode reads j's payload; no payload means the defaults.
func decode(j *stint.Job) (payload, error) {
	var p payload
	if len(j.Payload()) == 0 {
		return p, nil
	}
	if err := j.Decode(&p); err != nil {
		return p, err
	}
	if p.MS != nil && (*p.MS < 0 || time.Duration(*p.MS)*time.Millisecond > MaxSleep) {
		return p, stint.DeadLetter(stint.ReasonValidationFailed,
			fmt.Errorf("%s: ms is %d: use 0 to %d", j.Kind(), *p.MS, MaxSleep.Milliseconds()))
	}
	if p.Failures != nil && *p.Failures < 0 {
		return p, stint.DeadLetter(stint.ReasonValidationFailed, fmt.Errorf("%s: failures is %d: use 0 or more", j.Kind(), *p.Failures))
	}
	if p.Steps != nil && (*p.Steps < 0 || *p.Steps > 10000) {
		return p, stint.DeadLetter(stint.ReasonValidationFailed, fmt.Errorf("%s: steps is %d: use 0 to 10000", j.Kind(), *p.Steps))
	}
	return p, nil
}

func (p payload) sleep() time.Duration {
	if p.MS == nil {
		return DefaultSleep
	}
	return time.Duration(*p.MS) * time.Millisecond
}

func (handlers) noop(context.Context, *stint.Job) error { return nil }

func (h handlers) sleep(ctx context.Context, j *stint.Job) error {
	p, err := decode(j)
	if err != nil {
		return err
	}
	if err := h.wait(ctx, p.sleep()); err != nil {
		return err
	}
	return j.SetResult(map[string]int64{"slept_ms": p.sleep().Milliseconds()})
}

func (handlers) flaky(_ context.Context, j *stint.Job) error {
	p, err := decode(j)
	if err != nil {
		return err
	}
	failures := DefaultFailures
	if p.Failures != nil {
		failures = *p.Failures
	}
	if j.Attempt() <= failures {
		return fmt.Errorf("demo.flaky fails its first %d attempts: this is attempt %d of %d", failures, j.Attempt(), j.MaxAttempts())
	}
	return j.SetResult(map[string]int{"succeeded_on_attempt": j.Attempt()})
}

func (handlers) fail(_ context.Context, j *stint.Job) error {
	return fmt.Errorf("demo.fail always fails: attempt %d of %d", j.Attempt(), j.MaxAttempts())
}

// progress works its steps, resuming after the last checkpoint.
func (h handlers) progress(ctx context.Context, j *stint.Job) error {
	p, err := decode(j)
	if err != nil {
		return err
	}
	steps := DefaultSteps
	if p.Steps != nil {
		steps = *p.Steps
	}
	var cp struct {
		Done int `json:"done"`
	}
	if last := j.LastCheckpoint(); len(last) > 0 {
		if err := json.Unmarshal(last, &cp); err != nil {
			return stint.Permanent(fmt.Errorf("demo.progress: read the last checkpoint %s: %w", last, err))
		}
	}
	for cp.Done < steps {
		if err := h.wait(ctx, p.sleep()); err != nil {
			return err
		}
		cp.Done++
		if err := j.Checkpoint(ctx, cp, 1, 0); err != nil {
			return err // over budget: the job is halted, this checkpoint kept
		}
		if err := j.Progress(ctx, map[string]int{"done": cp.Done, "of": steps}); err != nil {
			return err
		}
	}
	return j.SetResult(map[string]int{"steps": steps})
}

// wait waits d, or returns the cause of ctx's cancellation.
func (h handlers) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-h.clock.After(d):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopped early: %w", context.Cause(ctx))
	}
}
