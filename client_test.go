package stint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
)

func TestReplayOfADeadLetteredJob(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		failing := e.start(muxOf("charge", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			return errors.New("card processor down")
		})), e.config())
		old := e.waitState(e.enqueue(stint.Spec{
			Kind: "charge", Queue: "default", Priority: 10, Payload: raw(`{"cents":500}`),
			MaxAttempts: 1, Env: map[string]string{"tenant": "acme"}, CorrelationID: "order-7",
		}).ID, stint.DeadLettered)
		ctx := context.Background()
		if err := failing.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		replay, err := e.client.Replay(ctx, old.ID)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if again, err := e.client.Replay(ctx, old.ID); err != nil || again.ID != replay.ID {
			t.Errorf("a second replay while the first is live: %s, %v; want the first, %s", again.ID, err, replay.ID)
		}
		e.start(muxOf("charge", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			return j.SetResult("charged")
		})), e.config())
		j := e.waitState(replay.ID, stint.Succeeded)
		if j.ReplayOf != old.ID || j.ParentJobID != old.ID || j.Kind != "charge" || j.Priority != 10 ||
			string(j.Payload) != `{"cents":500}` || j.Env["tenant"] != "acme" || j.CorrelationID != "order-7" || j.Attempt != 1 {
			t.Errorf("replay %+v: want a copy of %s linked to it", j, old.ID)
		}
		if string(j.Result) != `"charged"` {
			t.Errorf("result %s", j.Result)
		}
		if after := e.get(old.ID); after.Rev != old.Rev || after.State != stint.DeadLettered {
			t.Errorf("the original changed: rev %d → %d, state %s", old.Rev, after.Rev, after.State)
		}
	})
}

func TestReplayRefusesJobsNotDeadLettered(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	id := e.enqueue(stint.Spec{Kind: "x"}).ID
	_, err := e.client.Replay(context.Background(), id)
	var se *stint.Error
	if !errors.Is(err, stint.ErrInvalidTransition) || !errors.As(err, &se) || se.State != stint.Queued || se.JobID != id {
		t.Errorf("replay of a queued job: %v, want an *Error wrapping ErrInvalidTransition naming the state", err)
	}
	if _, err := e.client.Replay(context.Background(), "no-such-job"); !errors.Is(err, stint.ErrNotFound) {
		t.Errorf("replay of a missing job: %v, want ErrNotFound", err)
	}
}

func TestClientEnqueueGetListCancel(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	ctx := context.Background()

	res, err := e.client.EnqueueMany(ctx, []stint.Spec{
		{Kind: "mail", DedupeKey: "welcome-ada"},
		{Kind: "mail", DedupeKey: "welcome-ada"},
		{Kind: "mail", Queue: "bulk"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Existing || !res[1].Existing || res[1].Job.ID != res[0].Job.ID {
		t.Errorf("dedupe: %+v, want the second to return the first", res[:2])
	}
	if _, err := e.client.EnqueueMany(ctx, []stint.Spec{{Kind: "ok"}, {Kind: ""}}); !errors.Is(err, stint.ErrValidation) {
		t.Errorf("a batch with an invalid spec: %v, want ErrValidation", err)
	}

	bulk, err := e.client.List(ctx, stint.ListParams{Queue: "bulk"})
	if err != nil || len(bulk) != 1 || bulk[0].ID != res[2].Job.ID {
		t.Errorf("list bulk: %v, %v", bulk, err)
	}
	if _, err := e.client.Get(ctx, "nope"); !errors.Is(err, stint.ErrNotFound) {
		t.Errorf("get missing: %v", err)
	}

	j, err := e.client.Cancel(ctx, res[0].Job.ID, stint.CancelSoft, "changed my mind")
	if err != nil || j.State != stint.Cancelled || j.Reason != "changed my mind" {
		t.Errorf("soft cancel of a queued job: %s %q, %v; want cancelled at once", j.State, j.Reason, err)
	}
	if _, err := e.client.Cancel(ctx, res[0].Job.ID, stint.CancelHard, ""); err != nil {
		t.Errorf("cancelling again: %v, want a no-op", err)
	}
}

func TestClientWait(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	e.start(muxOf("noop", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil })), e.config())
	c, err := stint.NewClient(e.s, stint.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	res, _ := c.Enqueue(ctx, stint.Spec{Kind: "noop"})
	if j, err := c.Wait(ctx, res.Job.ID); err != nil || j.State != stint.Succeeded {
		t.Errorf("wait: %s, %v", j.State, err)
	}

	// A job nobody works: Wait ends with its context.
	res, _ = c.Enqueue(ctx, stint.Spec{Kind: "nobody"})
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	if _, err := c.Wait(short, res.Job.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait on a job nobody works: %v, want DeadlineExceeded", err)
	}
}
