package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
)

// stint dev narrates what the store recorded: a handler that returned nil
// for a job cancelled meanwhile is "lost", never "succeeded".
func TestNarrateOutcome(t *testing.T) {
	t.Parallel()
	job := lifecycle.Job{ID: "j1", Kind: "demo.sleep", Attempt: 1, MaxAttempts: 3}
	done := job
	done.State = lifecycle.Succeeded
	tests := []struct {
		name string
		o    stint.Outcome
		want string
	}{
		{"accepted", stint.Outcome{Job: done, Op: "complete", Took: time.Second}, "succeeded j1"},
		{"rejected as stale", stint.Outcome{Job: job, Op: "complete", Took: 20 * time.Second,
			Err: fmt.Errorf("complete: %w", stint.ErrStaleLease)}, "lost      j1"},
		{"lease lost first", stint.Outcome{Job: job, Err: fmt.Errorf("%w: the job was cancelled", stint.ErrLeaseLost)}, "the job was cancelled"},
		{"halted by the store", stint.Outcome{Job: job, Err: fmt.Errorf("%w: runtime budget of 1s", stint.ErrBudgetExceeded)}, "halted    j1"},
		{"not written", stint.Outcome{Job: job, Op: "complete", Err: fmt.Errorf("connection refused")}, "unsaved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			narrateOutcome(&out, clock.NewManual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))(tt.o)
			if !strings.Contains(out.String(), tt.want) || (tt.o.Err != nil && strings.Contains(out.String(), "succeeded")) {
				t.Errorf("printed %q, want %q and no success for a report the store did not accept", out.String(), tt.want)
			}
		})
	}
}
