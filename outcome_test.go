package stint_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
)

// The outcome a handler's return value decides, on both backends.

func TestHappyPath(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		fences := make(chan stint.Fence, 1)
		mux := stint.NewMux()
		mux.HandleFunc("double", func(ctx context.Context, j *stint.Job) error {
			var in struct{ N int }
			if err := j.Decode(&in); err != nil {
				return err
			}
			fences <- j.Fence()
			return j.SetResult(map[string]int{"double": 2 * in.N})
		})
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "double", Payload: raw(`{"N":21}`)}).ID
		j := e.waitState(id, stint.Succeeded)
		if string(j.Result) != `{"double":42}` {
			t.Errorf("result = %s, want {\"double\":42}", j.Result)
		}
		f := receive(t, fences, "the handler's fence")
		if f.JobID != id || f.Attempt != 1 || f.LeaseID == "" || f.LeaseID != j.LastLeaseID {
			t.Errorf("fence = %+v, want job %s attempt 1 lease %s", f, id, j.LastLeaseID)
		}
		want := []lifecycle.EventType{"enqueued", "claimed", "started", "succeeded"}
		if got := e.events(id); !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	})
}

func TestRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		var calls atomic.Int32
		mux := stint.NewMux()
		mux.HandleFunc("flaky", func(ctx context.Context, j *stint.Job) error {
			if calls.Add(1) < 3 {
				return errors.New("network unreachable")
			}
			return nil
		})
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "flaky", MaxAttempts: 3}).ID
		for attempt := 1; attempt <= 2; attempt++ {
			j := e.waitState(id, stint.Retrying)
			if j.Attempt != attempt || j.LastError == nil || j.LastError.Message != "network unreachable" {
				t.Fatalf("after attempt %d: attempt %d, last error %+v", attempt, j.Attempt, j.LastError)
			}
			e.promote()
		}
		j := e.waitState(id, stint.Succeeded)
		if j.Attempt != 3 {
			t.Errorf("attempt = %d, want 3", j.Attempt)
		}
	})
}

func TestPermanentFails(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("bad", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			return stint.Permanent(errors.New("the account is closed"))
		}))
		e.start(mux, e.config())
		j := e.waitState(e.enqueue(stint.Spec{Kind: "bad", MaxAttempts: 5}).ID, stint.Failed)
		if j.Attempt != 1 || j.Error == nil || j.Error.Class != lifecycle.ClassPermanent || j.Error.Message != "the account is closed" {
			t.Errorf("attempt %d, error %+v: want one attempt failed permanently", j.Attempt, j.Error)
		}
	})
}

func TestCodedErrorFollowsRetryRules(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	mux := muxOf("build", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
		return stint.WithCode("compile_error", errors.New("main.go:3: undefined: x"))
	}))
	e.start(mux, e.config())
	j := e.waitState(e.enqueue(stint.Spec{Kind: "build", MaxAttempts: 5}).ID, stint.Failed)
	if j.Error.Code != "compile_error" || j.Attempt != 1 {
		t.Errorf("error %+v after %d attempts: a compile error never retries", j.Error, j.Attempt)
	}
}

func TestExhaustedDeadLetters(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("doomed", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			return errors.New("upstream returned 503")
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "doomed", MaxAttempts: 2}).ID
		e.waitState(id, stint.Retrying)
		e.promote()
		j := e.waitState(id, stint.DeadLettered)
		if j.ReasonCode != lifecycle.ReasonExhaustedRetries || j.Attempt != 2 || j.LastError == nil || j.LastError.Message != "upstream returned 503" {
			t.Errorf("reason %q, attempt %d, last error %+v", j.ReasonCode, j.Attempt, j.LastError)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("limited", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			return stint.RetryAfter(42*time.Second, errors.New("rate limited"))
		}))
		e.start(mux, e.config())
		j := e.waitState(e.enqueue(stint.Spec{Kind: "limited"}).ID, stint.Retrying)
		// The delay is resolved on the store's clock, at the failure.
		if d := j.RunAt.Sub(j.UpdatedAt); d != 42*time.Second {
			t.Errorf("run_at is %s after the failure, want 42s", d)
		}
	})
}

func TestHalt(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("stoppable", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			if err := j.Checkpoint(ctx, map[string]int{"page": 7}, 1, 0); err != nil {
				return err
			}
			return stint.Halt("the report is long enough")
		}))
		e.start(mux, e.config())
		j := e.waitState(e.enqueue(stint.Spec{Kind: "stoppable"}).ID, stint.Halted)
		if j.Reason != "the report is long enough" || string(j.Checkpoint) != `{"page":7}` || j.Error != nil {
			t.Errorf("reason %q, checkpoint %s, error %+v", j.Reason, j.Checkpoint, j.Error)
		}
	})
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := stint.NewMux()
		mux.HandleFunc("typed", func(ctx context.Context, j *stint.Job) error {
			var in struct{ N int }
			return j.Decode(&in) // a string where a number belongs
		})
		mux.HandleFunc("policy", func(ctx context.Context, j *stint.Job) error {
			return stint.DeadLetter(stint.ReasonPolicyViolation, errors.New("tenant over quota"))
		})
		mux.HandleFunc("badcode", func(ctx context.Context, j *stint.Job) error {
			return stint.DeadLetter("no_such_code", errors.New("oops"))
		})
		e.start(mux, e.config())
		typed := e.enqueue(stint.Spec{Kind: "typed", Payload: raw(`{"N":"seven"}`)}).ID
		policy := e.enqueue(stint.Spec{Kind: "policy"}).ID
		badcode := e.enqueue(stint.Spec{Kind: "badcode"}).ID

		j := e.waitState(typed, stint.DeadLettered)
		if j.ReasonCode != stint.ReasonParseError || !strings.Contains(j.LastError.Message, "decode the payload") {
			t.Errorf("typed: reason %q, last error %+v", j.ReasonCode, j.LastError)
		}
		j = e.waitState(policy, stint.DeadLettered)
		if j.ReasonCode != stint.ReasonPolicyViolation || j.LastError.Message != "tenant over quota" || j.Attempt != 1 {
			t.Errorf("policy: reason %q, last error %+v", j.ReasonCode, j.LastError)
		}
		j = e.waitState(badcode, stint.Failed)
		if !strings.Contains(j.Error.Message, "no_such_code") {
			t.Errorf("badcode: error %+v: want it to name the unknown code", j.Error)
		}
	})
}

func TestPanicFailsTheAttemptWithItsStack(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("explode", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			var m map[string]int
			m["boom"] = 1 // assignment to entry in nil map
			return nil
		}))
		e.start(mux, e.config())
		j := e.waitState(e.enqueue(stint.Spec{Kind: "explode", MaxAttempts: 2}).ID, stint.Retrying)
		msg := j.LastError.Message
		if j.LastError.Code != "panic" || !strings.Contains(msg, "assignment to entry in nil map") || !strings.Contains(msg, "outcome_test.go") {
			t.Errorf("last error %+v: want code panic, the panic value and the stack", j.LastError)
		}
	})
}

func TestUnknownKindIsNeverClaimed(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("known", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil }))
		stranger := e.enqueue(stint.Spec{Kind: "unknown"}).ID
		known := e.enqueue(stint.Spec{Kind: "known"}).ID
		p := e.start(mux, e.config())
		e.waitState(known, stint.Succeeded)
		// A second job enqueued after the stranger, and claimed after it
		// would have been: the stranger is still waiting, never claimed.
		e.waitState(e.enqueue(stint.Spec{Kind: "known"}).ID, stint.Succeeded)
		j := e.get(stranger)
		if j.State != stint.Queued || j.Attempt != 0 {
			t.Errorf("the unknown kind's job is %s after %d attempts, want queued and never claimed", j.State, j.Attempt)
		}
		// The pool counts a completion once the store acknowledges it, which
		// can be just after the row is visible: wait for the count.
		var s stint.PoolStats
		eventually(t, "2 claimed and 2 succeeded", func() bool {
			s = p.Stats()
			return s.Claimed == 2 && s.Succeeded == 2
		}, func() string { return fmt.Sprintf("stats %+v", s) })
	})
}

func TestCheckpointResumesTheNextAttempt(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		resumed := make(chan string, 2)
		mux := muxOf("crawl", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			resumed <- string(j.LastCheckpoint())
			if j.Attempt() == 1 {
				if err := j.Checkpoint(ctx, map[string]int{"page": 3}, 3, 0); err != nil {
					return err
				}
				return errors.New("connection reset")
			}
			return nil
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "crawl"}).ID
		e.waitState(id, stint.Retrying)
		e.promote()
		j := e.waitState(id, stint.Succeeded)
		first, second := receive(t, resumed, "attempt 1"), receive(t, resumed, "attempt 2")
		if first != "" || second != `{"page":3}` || j.Usage.Steps != 3 {
			t.Errorf("attempt 1 resumed from %q, attempt 2 from %q, steps %d", first, second, j.Usage.Steps)
		}
	})
}

func TestProgressAndPhaseAreRecorded(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		b := newBlocker()
		mux := muxOf("upload", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			if err := j.Phase(ctx, "uploading"); err != nil {
				return err
			}
			if err := j.Progress(ctx, map[string]int{"done": 40, "of": 100}); err != nil {
				return err
			}
			return b.Work(ctx, j)
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "upload"}).ID
		receive(t, b.started, "the handler to start")
		j := e.get(id)
		if j.Phase != "uploading" || string(j.Progress) != `{"done":40,"of":100}` || j.State != stint.Running {
			t.Errorf("phase %q, progress %s, state %s", j.Phase, j.Progress, j.State)
		}
		b.release <- nil
		e.waitState(id, stint.Succeeded)
	})
}

// A retry-after is a delay resolved on the store's clock: a worker whose
// clock runs ten minutes ahead (or behind) must not move the retry.
func TestRetryAfterIsResolvedOnTheStoresClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			e := newSQLite(t) // the store's clock is e.clk
			mux := muxOf("limited", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
				return stint.RetryAfter(2*time.Second, errors.New("rate limited"))
			}))
			cfg := e.config()
			cfg.Clock = clock.NewManual(t0.Add(skew))
			e.start(mux, cfg)
			j := e.waitState(e.enqueue(stint.Spec{Kind: "limited"}).ID, stint.Retrying)
			if want := e.clk.Now().Add(2 * time.Second); !j.RunAt.Equal(want) {
				t.Errorf("run_at = %s, want %s (2s after the failure by the store's clock)", j.RunAt, want)
			}
		})
	}
}
