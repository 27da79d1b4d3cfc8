package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// TestBudget: a job that passes its budget is halted, not failed, and keeps
// its last checkpoint: by steps (the checkpoint that passes it halts the
// job) and by runtime (the pool or the timeouts service halts it).
func TestBudget(t *testing.T) {
	t.Run("steps", func(t *testing.T) {
		t.Parallel()
		onBoth(t, func(t *testing.T, e *env) {
			const kind = "e2e.budget-steps"
			e.maintain()
			var last json.RawMessage
			checkpointErr := make(chan error, 1)
			e.startPool(e.poolConfig("worker"), kind, func(ctx context.Context, j *stint.Job) error {
				for i := 1; i <= 10; i++ {
					state := map[string]int{"done": i}
					last, _ = json.Marshal(state)
					if err := j.Checkpoint(ctx, state, 1, 0); err != nil {
						checkpointErr <- err
						return err
					}
				}
				return nil
			})
			job := e.enqueue(stint.Spec{Kind: kind, Budget: &stint.Budget{MaxSteps: 3}})
			j := e.untilState(job.ID, stint.Halted, 0) // no time needs to pass
			if err := <-checkpointErr; !errors.Is(err, stint.ErrBudgetExceeded) {
				t.Errorf("the checkpoint past the budget returned %v, want ErrBudgetExceeded", err)
			}
			if j.ReasonCode != lifecycle.ReasonBudget || string(j.Checkpoint) != string(last) || j.Usage.Steps != 4 {
				t.Errorf("halted with reason %q, checkpoint %s, %d steps; want budget_exceeded, %s, 4", j.ReasonCode, j.Checkpoint, j.Usage.Steps, last)
			}
			if j.Error != nil {
				t.Errorf("a halted job has an error: %+v", j.Error)
			}
			e.wantTypes(job.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
				lifecycle.EventCheckpointed, lifecycle.EventCheckpointed, lifecycle.EventCheckpointed, lifecycle.EventHalted)
		})
	})
	t.Run("runtime", func(t *testing.T) {
		t.Parallel()
		onBoth(t, func(t *testing.T, e *env) {
			const kind = "e2e.budget-runtime"
			e.maintain()
			g := e.newGate(false)
			e.startPool(e.poolConfig("worker"), kind, func(ctx context.Context, j *stint.Job) error {
				if err := j.Checkpoint(ctx, map[string]string{"page": "one"}, 1, 0); err != nil {
					return err
				}
				return g.work(ctx, j)
			})
			job := e.enqueue(stint.Spec{Kind: kind, Budget: &stint.Budget{MaxRuntime: lifecycle.Duration(e.pick(time.Minute, time.Second))}})
			e.awaitStart(g)
			j := e.untilState(job.ID, stint.Halted, e.step())
			if j.ReasonCode != lifecycle.ReasonBudget || string(j.Checkpoint) != `{"page":"one"}` {
				t.Errorf("halted with reason %q, checkpoint %s; want budget_exceeded, the checkpoint kept", j.ReasonCode, j.Checkpoint)
			}
			e.wantTypes(job.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
				lifecycle.EventCheckpointed, lifecycle.EventHalted)
			e.until("the handler to be cancelled", e.step(), func() bool { return g.cause() != nil })
			if err := g.cause(); !errorIsAny(err, stint.ErrBudgetExceeded, stint.ErrLeaseLost) {
				t.Errorf("the handler's context was cancelled with %v, want ErrBudgetExceeded (or ErrLeaseLost when the timeouts service came first)", err)
			}
		})
	})
}

func errorIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
