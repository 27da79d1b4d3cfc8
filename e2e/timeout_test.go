package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// TestAttemptTimeout: an attempt that runs past the job's timeout fails
// with code timeout: retried while attempts are left (here the second
// attempt succeeds), timed_out when none are.
func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		want        stint.State
		events      []lifecycle.EventType
	}{
		{"attempts left", 2, stint.Succeeded, []lifecycle.EventType{
			lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventRetryScheduled,
			lifecycle.EventPromoted, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventSucceeded}},
		{"no attempts left", 1, stint.TimedOut, []lifecycle.EventType{
			lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventTimedOut}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			onBoth(t, func(t *testing.T, e *env) {
				const kind = "e2e.timeout"
				e.maintain()
				// The first attempt waits for its context; later ones succeed.
				e.startPool(e.poolConfig("worker"), kind, func(ctx context.Context, j *stint.Job) error {
					if j.Attempt() > 1 {
						return nil
					}
					<-ctx.Done()
					return context.Cause(ctx)
				})
				job := e.enqueue(stint.Spec{Kind: kind, MaxAttempts: tt.maxAttempts, Timeout: e.pick(30*time.Second, time.Second)})
				// Time runs until the first attempt is over and the next one
				// has begun, then stands still, so that the second attempt
				// cannot run past the timeout too.
				e.until("the first attempt to end", e.step(), func() bool {
					j := e.get(job.ID)
					return j.Attempt > 1 || j.State.Terminal()
				})
				j := e.untilState(job.ID, tt.want, 0)
				evs := e.wantTypes(job.ID, tt.events...)
				var failure stint.Event
				for _, ev := range evs {
					if ev.Type == lifecycle.EventRetryScheduled || ev.Type == lifecycle.EventTimedOut {
						failure = ev
						break
					}
				}
				if err := eventError(failure); err.Code != lifecycle.ReasonTimeout || err.Attempt != 1 || !strings.Contains(err.Message, "timeout") {
					t.Errorf("the first attempt's failure records %+v, want code timeout on attempt 1", err)
				}
				if tt.want == stint.TimedOut && (j.Error == nil || j.Error.Code != lifecycle.ReasonTimeout || j.ReasonCode != lifecycle.ReasonTimeout) {
					t.Errorf("timed-out job: error %+v, reason %q; want code timeout", j.Error, j.ReasonCode)
				}
			})
		})
	}
}

// TestDeadline: the overall deadline ends a job from any live state, with
// code deadline: a running one (its handler is cancelled with ErrDeadline)
// and a queued one that no worker can run.
func TestDeadline(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.deadline"
		e.maintain()
		g := e.newGate(false)
		e.startPool(e.poolConfig("worker"), kind, g.work)
		deadline := e.now().Add(e.pick(time.Minute, 1500*time.Millisecond))
		running := e.enqueue(stint.Spec{Kind: kind, Deadline: &deadline})
		waiting := e.enqueue(stint.Spec{Kind: "e2e.no-worker-knows-this", Deadline: &deadline})
		e.awaitStart(g)

		for _, id := range []string{running.ID, waiting.ID} {
			j := e.untilState(id, stint.TimedOut, e.step())
			if j.Error == nil || j.Error.Code != lifecycle.ReasonDeadline || j.ReasonCode != lifecycle.ReasonDeadline {
				t.Errorf("job %s: error %+v, reason %q; want code deadline", id, j.Error, j.ReasonCode)
			}
			if j.FinishedAt.Before(deadline.Add(-time.Second)) {
				t.Errorf("job %s timed out at %v, before its deadline %v", id, j.FinishedAt, deadline)
			}
		}
		e.wantTypes(running.ID, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventTimedOut)
		e.wantTypes(waiting.ID, lifecycle.EventEnqueued, lifecycle.EventTimedOut)
		e.until("the handler to be cancelled", e.step(), func() bool { return g.cause() != nil })
		if err := g.cause(); !errorIsAny(err, stint.ErrDeadline, stint.ErrLeaseLost) {
			t.Errorf("the handler's context was cancelled with %v, want ErrDeadline (or ErrLeaseLost when the timeouts service came first)", err)
		}
	})
}
