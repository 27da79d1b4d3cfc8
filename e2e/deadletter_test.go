package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
)

// TestExhaustionAndReplay: a job that fails every attempt is dead-lettered
// (exhausted_retries) with each attempt's error in its events; `stint dlq
// ls` lists it; a replay is a new job, linked to it, that succeeds, while
// the original stays as it was.
func TestExhaustionAndReplay(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const kind = "e2e.exhaust"
		e.maintain()
		e.startPool(e.poolConfig("worker"), kind, func(_ context.Context, j *stint.Job) error {
			if j.Record().ReplayOf != "" {
				return j.SetResult(map[string]string{"fixed": "yes"})
			}
			return stint.WithCode("upstream_503", fmt.Errorf("upstream said no on attempt %d", j.Attempt()))
		})
		job := e.enqueue(stint.Spec{Kind: kind, MaxAttempts: 3, Payload: json.RawMessage(`{"order":42}`)})
		dead := e.untilState(job.ID, stint.DeadLettered, e.step())
		if dead.Attempt != 3 || dead.ReasonCode != lifecycle.ReasonExhaustedRetries || dead.LastError == nil ||
			dead.LastError.Code != "upstream_503" || !strings.HasSuffix(dead.LastError.Message, "upstream said no on attempt 3") {
			t.Errorf("dead-lettered after %d attempts, reason %q, last error %+v", dead.Attempt, dead.ReasonCode, dead.LastError)
		}
		evs := e.wantTypes(job.ID,
			lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventRetryScheduled,
			lifecycle.EventPromoted, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventRetryScheduled,
			lifecycle.EventPromoted, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventDeadLettered)
		var errs []string
		for _, ev := range evs {
			if ev.Type == lifecycle.EventRetryScheduled || ev.Type == lifecycle.EventDeadLettered {
				je := eventError(ev)
				// The message is the error's text, which names its code too.
				errs = append(errs, fmt.Sprintf("%d %s %s", je.Attempt, je.Code, strings.TrimPrefix(je.Message, je.Code+": ")))
			}
		}
		want := []string{
			"1 upstream_503 upstream said no on attempt 1",
			"2 upstream_503 upstream said no on attempt 2",
			"3 upstream_503 upstream said no on attempt 3",
		}
		if !slices.Equal(errs, want) {
			t.Errorf("the events record the errors %q, want %q", errs, want)
		}

		code, out, errOut := e.stint("dlq", "ls", "--json")
		var listed []stint.JobRecord
		if err := json.Unmarshal([]byte(out), &listed); code != cli.ExitOK || err != nil || len(listed) != 1 || listed[0].ID != job.ID {
			t.Errorf("stint dlq ls --json: exit %d, %s%s", code, out, errOut)
		}

		replay, err := e.client.Replay(context.Background(), job.ID)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if replay.ID == job.ID || replay.ReplayOf != job.ID || replay.ParentJobID != job.ID || string(replay.Payload) != `{"order":42}` {
			t.Errorf("the replay is %+v, want a new job linked to %s with the same payload", replay, job.ID)
		}
		done := e.untilState(replay.ID, stint.Succeeded, e.step())
		if done.Attempt != 1 || string(done.Result) != `{"fixed":"yes"}` {
			t.Errorf("the replay succeeded on attempt %d with %s", done.Attempt, done.Result)
		}
		if after := e.get(job.ID); after.State != stint.DeadLettered || after.Rev != dead.Rev {
			t.Errorf("the replay changed the original: %s, rev %d → %d", after.State, dead.Rev, after.Rev)
		}
		if _, err := e.client.Replay(context.Background(), replay.ID); !errorIsAny(err, stint.ErrInvalidTransition) {
			t.Errorf("replaying a succeeded job: %v, want ErrInvalidTransition", err)
		}
	})
}
