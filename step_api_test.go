package stint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/store"
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
			// Until a time already past: no suspend, no new attempt.
			if err := j.SleepUntil(ctx, "no-wait", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
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

// TestStepChild: a job starts a child job as a step and awaits it without a
// lease; the child's end wakes it with the child's result, and a replay of
// the parent finds the same child rather than starting another.
func TestStepChild(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		var started []string
		var mu sync.Mutex
		mux := muxOf("parent", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			id, err := j.StartChild(ctx, "child", stint.Spec{Kind: "child", Payload: json.RawMessage(`{"n":20}`)})
			if err != nil {
				return err
			}
			mu.Lock()
			started = append(started, id)
			mu.Unlock()
			o, err := j.AwaitChild(ctx, "await", id)
			if err != nil {
				return err
			}
			if o.State != stint.Succeeded {
				return stint.Permanent(errors.New("the child did not succeed"))
			}
			return j.SetResult(json.RawMessage(o.Result))
		}))
		release := make(chan struct{}) // the child ends once the parent waits
		mux.Handle("child", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			var p struct{ N int }
			if err := json.Unmarshal(j.Payload(), &p); err != nil {
				return err
			}
			return j.SetResult(p.N + 1)
		}))
		e.start(mux, e.config())
		id := e.enqueue(stint.Spec{Kind: "parent"}).ID
		if s := e.waitState(id, stint.Scheduled); s.LeaseID != "" {
			t.Fatalf("the awaiting parent holds lease %q", s.LeaseID)
		}
		close(release)
		var j stint.JobRecord
		eventually(t, "the parent to succeed", func() bool {
			j = e.get(id)
			return j.State == stint.Succeeded
		}, func() string { return describeFamily(e, j, &mu, started) })
		if string(j.Result) != "21" {
			t.Fatalf("parent's result %s, want the child's 21", j.Result)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(started) < 2 || started[0] != started[len(started)-1] {
			t.Fatalf("children seen by the parent's attempts: %v; want the same child on the replay after the wait", started)
		}
		child, err := e.client.Get(context.Background(), started[0])
		if err != nil || child.ParentJobID != id || child.State != stint.Succeeded {
			t.Fatalf("child %+v, %v; want a succeeded child of %s", child, err, id)
		}
	})
}

// describeFamily says where a parent and the children it started stand, and
// what the parent's log holds, for a test that gave up waiting on them.
func describeFamily(e *env, parent stint.JobRecord, mu *sync.Mutex, started []string) string {
	mu.Lock()
	ids := append([]string(nil), started...)
	mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "parent %s is %s (reason %q %q, attempt %d)", parent.ID, parent.State, parent.ReasonCode, parent.Reason, parent.Attempt)
	for _, id := range ids {
		c, err := e.client.Get(context.Background(), id)
		fmt.Fprintf(&b, "; child %s is %s (attempt %d, lease %q, error %v)", id, c.State, c.Attempt, c.LeaseID, err)
	}
	for _, id := range append([]string{parent.ID}, ids...) {
		evs, err := e.client.Events(context.Background(), id)
		if err != nil {
			fmt.Fprintf(&b, "; events of %s: %v", id, err)
		}
		for _, ev := range evs {
			fmt.Fprintf(&b, "\n  %s %s %s->%s attempt %d by %s %s", id, ev.Type, ev.FromState, ev.ToState, ev.Attempt, ev.Actor, ev.ActorID)
		}
	}
	return b.String()
}

// TestStepChildGoldenReplay: a golden replay of a handler that starts and
// awaits a child replays both from the records, and one that starts a
// child the golden job never started diverges at that step.
func TestStepChildGoldenReplay(t *testing.T) {
	t.Parallel()
	h := stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
		id, err := j.StartChild(ctx, "kid", stint.Spec{Kind: "kid"})
		if err != nil {
			return err
		}
		o, err := j.AwaitChild(ctx, "await", id)
		if err != nil {
			return err
		}
		return j.SetResult(json.RawMessage(o.Result))
	})
	g := stint.Golden{JobID: "parent", Kind: "parent", State: stint.Succeeded, Result: json.RawMessage(`21`),
		Steps: []store.StepRecord{
			{JobID: "parent", Seq: 1, Name: "kid", Kind: "child", Status: "ok", Output: json.RawMessage(`{"job_id":"c1"}`)},
			{JobID: "parent", Seq: 2, Name: "await", Kind: "await", Status: "ok", Output: json.RawMessage(`{"job_id":"c1","state":"succeeded","result":21}`)},
		}}
	if err := stint.ReplayGolden(t.Context(), g, h); err != nil {
		t.Fatalf("replay of the recorded child steps: %v", err)
	}
	var d *stint.Divergence
	g.Steps = nil
	if err := stint.ReplayGolden(t.Context(), g, h); !errors.As(err, &d) || d.Seq != 1 || d.Name != "kid" {
		t.Fatalf("replay of a child the golden job never started: %v, want a divergence at step 1 kid", err)
	}
}
