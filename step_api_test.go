package stint_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/step"
)

// runs counts how many times each step function actually ran.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) fn(name string, v int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[name]++
		return v, nil
	}
}

func (r *runs) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[name]
}

// TestStepRunsOnceAcrossAttempts: an attempt that fails after two steps is
// retried; the retry gets their results back without running them again.
func TestStepRunsOnceAcrossAttempts(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		var r runs
		mux := muxOf("steps", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			a, err := stint.Step(ctx, j, "a", r.fn("a", 1))
			if err != nil {
				return err
			}
			b, err := stint.Step(ctx, j, "b", r.fn("b", 2))
			if err != nil {
				return err
			}
			if j.Attempt() == 1 {
				return errors.New("the worker crashed after step b")
			}
			c, err := stint.Step(ctx, j, "c", r.fn("c", 3))
			if err != nil {
				return err
			}
			return j.SetResult(a + b + c)
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "steps"}).ID
		e.waitState(id, stint.Retrying)
		e.promote()
		j := e.waitState(id, stint.Succeeded)
		if string(j.Result) != "6" {
			t.Errorf("result %s, want 6", j.Result)
		}
		for _, s := range []string{"a", "b", "c"} {
			if n := r.count(s); n != 1 {
				t.Errorf("step %s ran %d times, want once", s, n)
			}
		}
		recs, err := e.client.Steps(context.Background(), id)
		if err != nil || len(recs) != 3 || recs[0].Attempt != 1 || recs[2].Attempt != 2 {
			t.Fatalf("steps %+v, %v", recs, err)
		}
	})
}

// TestStepNondeterministic: a handler that asks for another step where one
// is recorded fails the job with the reason code nondeterministic.
func TestStepNondeterministic(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		var r runs
		mux := muxOf("drift", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			name := "charge"
			if j.Attempt() > 1 {
				name = "refund" // new code, old job in flight
			}
			if _, err := stint.Step(ctx, j, name, r.fn(name, 1)); err != nil {
				return err
			}
			if j.Attempt() == 1 {
				return errors.New("crash")
			}
			return nil
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "drift"}).ID
		e.waitState(id, stint.Retrying)
		e.promote()
		j := e.waitState(id, stint.Failed)
		if j.Error == nil || j.Error.Code != step.CodeNondeterministic {
			t.Fatalf("error %+v, want code %s", j.Error, step.CodeNondeterministic)
		}
		if r.count("refund") != 0 {
			t.Errorf("the diverging step ran")
		}
	})
}

// TestStepSleepSpendsNoAttempt: a durable sleep hands the lease back; the
// job is woken by the scheduler at its time and goes on, with max_attempts
// 1 and no step run twice.
func TestStepSleepSpendsNoAttempt(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		var r runs
		mux := muxOf("nap", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			if _, err := stint.Step(ctx, j, "before", r.fn("before", 1)); err != nil {
				return err
			}
			if err := j.Sleep(ctx, "nap", time.Minute); err != nil {
				return err
			}
			_, err := stint.Step(ctx, j, "after", r.fn("after", 2))
			return err
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "nap", MaxAttempts: 1}).ID
		s := e.waitState(id, stint.Scheduled)
		if s.LeaseID != "" || s.ReasonCode != "suspended" {
			t.Fatalf("sleeping job: lease %q reason %q", s.LeaseID, s.ReasonCode)
		}
		e.promote()
		j := e.waitState(id, stint.Succeeded)
		if j.Attempt != 2 || j.Failures != 0 || r.count("before") != 1 || r.count("after") != 1 {
			t.Fatalf("attempt %d failures %d before %d after %d", j.Attempt, j.Failures, r.count("before"), r.count("after"))
		}
	})
}

// TestStepSignal: a job waits for a signal without a lease; the signal
// wakes it and its payload is the wait's result.
func TestStepSignal(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		mux := muxOf("approval", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			p, ok, err := j.WaitSignal(ctx, "approve", time.Hour)
			if err != nil {
				return err
			}
			if !ok {
				return stint.Permanent(errors.New("no approval in time"))
			}
			return j.SetResult(json.RawMessage(p))
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "approval"}).ID
		e.waitState(id, stint.Scheduled)
		if _, err := e.client.Signal(context.Background(), id, "approve", map[string]string{"by": "alice"}); err != nil {
			t.Fatalf("signal: %v", err)
		}
		j := e.waitState(id, stint.Succeeded)
		if string(j.Result) != `{"by":"alice"}` {
			t.Errorf("result %s", j.Result)
		}
	})
}
