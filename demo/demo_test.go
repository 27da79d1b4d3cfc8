package demo_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

func newMux() *stint.Mux {
	mux := stint.NewMux()
	demo.Register(mux, clock.System{})
	return mux
}

func TestKindsAreRegistered(t *testing.T) {
	t.Parallel()
	if got := newMux().Kinds(); !slices.Equal(got, demo.Kinds) {
		t.Errorf("Register registers %v, want demo.Kinds %v", got, demo.Kinds)
	}
}

// TestOneAttempt runs one attempt of each kind and checks where it ends.
func TestOneAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    stint.Spec
		want    stint.State
		result  string
		errCode string
	}{
		{"noop", stint.Spec{Kind: demo.KindNoop}, stint.Succeeded, "null", ""},
		{"sleep", stint.Spec{Kind: demo.KindSleep, Payload: json.RawMessage(`{"ms": 1}`)}, stint.Succeeded, `{"slept_ms":1}`, ""},
		{"sleep, negative", stint.Spec{Kind: demo.KindSleep, Payload: json.RawMessage(`{"ms": -1}`)}, stint.DeadLettered, "", stint.ReasonValidationFailed},
		{"sleep, not JSON object", stint.Spec{Kind: demo.KindSleep, Payload: json.RawMessage(`[1]`)}, stint.DeadLettered, "", stint.ReasonParseError},
		{"flaky, first attempt", stint.Spec{Kind: demo.KindFlaky}, stint.Retrying, "", "error"},
		{"flaky, no failures", stint.Spec{Kind: demo.KindFlaky, Payload: json.RawMessage(`{"failures": 0}`)}, stint.Succeeded, `{"succeeded_on_attempt":1}`, ""},
		{"fail, one attempt", stint.Spec{Kind: demo.KindFail, MaxAttempts: 1}, stint.DeadLettered, "", "error"},
		{"progress", stint.Spec{Kind: demo.KindProgress, Payload: json.RawMessage(`{"steps": 3, "ms": 0}`)}, stint.Succeeded, `{"steps":3}`, ""},
		{"progress over budget", stint.Spec{Kind: demo.KindProgress, Payload: json.RawMessage(`{"steps": 3, "ms": 0}`), Budget: &stint.Budget{MaxSteps: 2}}, stint.Halted, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := stinttest.NewStore(t)
			j := stinttest.WorkOne(t, s, newMux(), tt.spec)
			if j.State != tt.want {
				t.Fatalf("state %s (last error %+v), want %s", j.State, j.LastError, tt.want)
			}
			if tt.result != "" && string(j.Result) != tt.result {
				t.Errorf("result %s, want %s", j.Result, tt.result)
			}
			if tt.errCode != "" && (j.LastError == nil || j.LastError.Code != tt.errCode) {
				t.Errorf("last error %+v, want code %s", j.LastError, tt.errCode)
			}
		})
	}
}

// TestRetries runs the kinds that need several attempts to the end, moving
// the store's clock past each backoff.
func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind     string
		want     stint.State
		attempts int
	}{
		{demo.KindFlaky, stint.Succeeded, 3},
		{demo.KindFail, stint.DeadLettered, 3},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewManual(time.Now())
			s := stinttest.NewStoreWithClock(t, clk)
			ctx := context.Background()
			res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: tt.kind}}})
			if err != nil {
				t.Fatal(err)
			}
			id := res[0].Job.ID
			mux := newMux()
			for range 3 {
				stinttest.Drain(t, s, mux)
				clk.Advance(time.Minute)
				if _, err := s.JobPromoteDue(ctx, &store.MaintainParams{}); err != nil {
					t.Fatal(err)
				}
			}
			j, err := s.JobGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != tt.want || j.Attempt != tt.attempts {
				t.Errorf("%s after %d attempts, want %s after %d (last error %+v)", j.State, j.Attempt, tt.want, tt.attempts, j.LastError)
			}
			if tt.want == stint.DeadLettered && j.ReasonCode != stint.ReasonExhaustedRetries {
				t.Errorf("reason code %q, want %q", j.ReasonCode, stint.ReasonExhaustedRetries)
			}
		})
	}
}

// TestProgressResumes checks that a retried demo.progress resumes after
// its last checkpoint instead of starting over.
func TestProgressResumes(t *testing.T) {
	t.Parallel()
	s := stinttest.NewStore(t)
	mux := stint.NewMux()
	demo.Register(mux, clock.System{})
	var firstSteps []int
	mux.Use(func(next stint.Handler) stint.Handler {
		return stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			var cp struct{ Done int }
			_ = json.Unmarshal(j.LastCheckpoint(), &cp)
			firstSteps = append(firstSteps, cp.Done)
			return next.Work(ctx, j)
		})
	})
	// A checkpoint from an earlier attempt: the handler starts at step 2.
	res, err := s.JobEnqueue(context.Background(), &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: demo.KindProgress, Payload: json.RawMessage(`{"steps": 4, "ms": 0}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	jobs, err := s.JobClaim(context.Background(), &store.JobClaimParams{WorkerID: "earlier", Queues: []string{"default"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	owner := store.OwnerParams{JobID: id, LeaseID: jobs[0].LeaseID}
	if _, err := s.JobCheckpoint(context.Background(), &store.JobCheckpointParams{OwnerParams: owner, Checkpoint: json.RawMessage(`{"done": 2}`), Steps: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobRelease(context.Background(), &store.JobReleaseParams{OwnerParams: owner, Requeue: true}); err != nil {
		t.Fatal(err)
	}
	stinttest.Drain(t, s, mux)
	j, err := s.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != stint.Succeeded || j.Usage.Steps != 4 || !slices.Equal(firstSteps, []int{2}) {
		t.Errorf("state %s, %d steps used, attempts started at %v; want succeeded, 4 steps, started at [2]", j.State, j.Usage.Steps, firstSteps)
	}
}

func TestSpecsAreValid(t *testing.T) {
	t.Parallel()
	kinds := map[string]bool{}
	for _, s := range demo.Specs("") {
		if err := s.Validate(time.Now()); err != nil {
			t.Errorf("%s: %v", s.Kind, err)
		}
		kinds[s.Kind] = true
	}
	for _, k := range demo.Kinds {
		if !kinds[k] {
			t.Errorf("Specs has no %s job", k)
		}
	}
}
