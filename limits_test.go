package stint_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// Time limits and budgets turn into context cancellation for the handler,
// and into the matching outcome when it returns.

func TestTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxAttempts int
		want        stint.State
	}{
		{"attempts left: retried", 2, stint.Retrying},
		{"no attempts left: timed out", 1, stint.TimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			onBoth(t, func(t *testing.T, e *env) {
				b := newBlocker()
				e.start(muxOf("slow", b), e.config())
				id := e.enqueue(stint.Spec{Kind: "slow", Timeout: 10 * time.Second, MaxAttempts: tc.maxAttempts}).ID
				receive(t, b.started, "the handler to start")
				e.advanceUntil(5*time.Second, "the timeout", func() bool { return len(b.causes) > 0 })
				if cause := <-b.causes; !errors.Is(cause, stint.ErrTimeout) {
					t.Errorf("cause = %v, want ErrTimeout", cause)
				}
				b.release <- context.DeadlineExceeded // an error; nil would complete the job
				j := e.waitState(id, tc.want)
				if j.LastError == nil || j.LastError.Code != lifecycle.ReasonTimeout {
					t.Errorf("last error %+v, want code timeout", j.LastError)
				}
			})
		})
	}
}

func TestDeadlineTimesTheJobOut(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	b := newBlocker()
	e.start(muxOf("slow", b), e.config())
	deadline := e.clk.Now().Add(30 * time.Second)
	id := e.enqueue(stint.Spec{Kind: "slow", Deadline: &deadline, MaxAttempts: 5}).ID
	receive(t, b.started, "the handler to start")
	e.advanceUntil(10*time.Second, "the deadline", func() bool { return len(b.causes) > 0 })
	if cause := <-b.causes; !errors.Is(cause, stint.ErrDeadline) {
		t.Errorf("cause = %v, want ErrDeadline", cause)
	}
	b.release <- context.Canceled
	j := e.waitState(id, stint.TimedOut)
	if j.ReasonCode != lifecycle.ReasonDeadline || j.Attempt != 1 {
		t.Errorf("reason %q after %d attempts, want deadline after 1", j.ReasonCode, j.Attempt)
	}
}

func TestStepBudgetHaltsWithTheCheckpointKept(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		errs := make(chan error, 1)
		mux := muxOf("agent", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			for step := 1; ; step++ {
				if err := j.Checkpoint(ctx, map[string]int{"step": step}, 2, 0); err != nil {
					errs <- err
					errs <- context.Cause(ctx)
					return err
				}
			}
		}))
		p := e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "agent", Budget: &stint.Budget{MaxSteps: 5}}).ID
		j := e.waitState(id, stint.Halted)
		if err := receive(t, errs, "the checkpoint's error"); !errors.Is(err, stint.ErrBudgetExceeded) {
			t.Errorf("checkpoint over budget: %v, want ErrBudgetExceeded", err)
		}
		if cause := receive(t, errs, "the cause"); !errors.Is(cause, stint.ErrBudgetExceeded) {
			t.Errorf("cause = %v, want ErrBudgetExceeded", cause)
		}
		if j.ReasonCode != lifecycle.ReasonBudget || string(j.Checkpoint) != `{"step":3}` || j.Usage.Steps != 6 {
			t.Errorf("reason %q, checkpoint %s, steps %d: want budget_exceeded at step 3 (6 of 5)", j.ReasonCode, j.Checkpoint, j.Usage.Steps)
		}
		eventually(t, "the handler to return", func() bool { return p.Stats().Running == 0 })
		if s := p.Stats(); s.Failed != 0 || s.Succeeded != 0 || s.Stale != 0 {
			t.Errorf("stats %+v: the pool must report nothing after the store halted the job", s)
		}
	})
}

func TestRuntimeBudgetHalts(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		b := newBlocker()
		e.start(muxOf("agent", b), e.config())
		id := e.enqueue(stint.Spec{Kind: "agent", Budget: &stint.Budget{MaxRuntime: lifecycle.Duration(20 * time.Second)}}).ID
		receive(t, b.started, "the handler to start")
		e.advanceUntil(5*time.Second, "the runtime budget", func() bool { return len(b.causes) > 0 })
		if cause := <-b.causes; !errors.Is(cause, stint.ErrBudgetExceeded) {
			t.Errorf("cause = %v, want ErrBudgetExceeded", cause)
		}
		b.release <- context.Canceled
		j := e.waitState(id, stint.Halted)
		if j.ReasonCode != lifecycle.ReasonBudget || !strings.Contains(j.Reason, "runtime budget") {
			t.Errorf("reason %q (%s), want the runtime budget", j.ReasonCode, j.Reason)
		}
	})
}
