package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestRemoteChildSteps: a stock pool on a remote store, with a worker
// token (which may neither enqueue nor read any job), runs a handler that
// starts a child job and awaits it. The parent hands its lease back while
// it waits, the child's end wakes it, its replay finds the same child, and
// the child's outcome is recorded as the await step. On both backends.
func TestRemoteChildSteps(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			url, clientTok, workerTok := serve(t, s)
			producer := dial(t, url, clientTok)
			workers := dial(t, url, workerTok)

			var mu sync.Mutex
			var started []string // the child id each attempt of the parent saw
			release := make(chan struct{})
			mux := stint.NewMux()
			mux.HandleFunc("parent", func(ctx context.Context, j *stint.Job) error {
				id, err := j.StartChild(ctx, "kid", stint.Spec{Kind: "kid", Queue: "family", Payload: json.RawMessage(`{"n":20}`)})
				if err != nil {
					return err
				}
				mu.Lock()
				started = append(started, id)
				mu.Unlock()
				o, err := j.AwaitChild(ctx, "await kid", id)
				if err != nil {
					return err
				}
				if o.State != stint.Succeeded {
					return stint.Permanent(errors.New("the child did not succeed"))
				}
				return j.SetResult(o.Result)
			})
			mux.HandleFunc("kid", func(ctx context.Context, j *stint.Job) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				var p struct{ N int }
				if err := json.Unmarshal(j.Payload(), &p); err != nil {
					return err
				}
				return j.SetResult(map[string]int{"n": p.N + 1})
			})
			pool, err := stint.NewPool(workers, mux, stint.Config{Queues: map[string]int{"family": 2},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := pool.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer pool.Stop(context.Background())

			res, err := producer.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "parent", Queue: "family", CorrelationID: "order-7"}}})
			if err != nil {
				t.Fatal(err)
			}
			id := res[0].Job.ID
			// The parent waits for its child without a lease.
			waitFor(t, "the parent awaiting its child", func() bool {
				j, err := producer.JobGet(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				return j.State == lifecycle.Scheduled && j.LeaseID == ""
			})
			close(release)
			waitState(t, producer, id, lifecycle.Succeeded)

			j, err := producer.JobGet(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := producer.JobSteps(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 2 || steps[0].Kind != store.StepChild || steps[1].Kind != store.StepAwait {
				t.Fatalf("steps %v, want a child step and an await", steps)
			}
			// The child's outcome, read with GetChild, is the await's record.
			if want := `"state":"succeeded","result":{"n":21}`; !strings.Contains(string(steps[1].Output), want) {
				t.Fatalf("the await's record %s, want it to hold %s", steps[1].Output, want)
			}
			mu.Lock()
			seen := append([]string(nil), started...)
			mu.Unlock()
			if len(seen) < 2 || seen[0] != seen[len(seen)-1] {
				t.Fatalf("children seen by the parent's attempts: %v; want the same child on the replay after the wake", seen)
			}
			child, err := producer.JobGet(t.Context(), seen[0])
			if err != nil {
				t.Fatal(err)
			}
			if child.ParentJobID != id || child.StepIndex != 1 || child.CorrelationID != "order-7" || child.State != lifecycle.Succeeded {
				t.Fatalf("child %+v: want a succeeded child of %s at step 1, correlation order-7", child, id)
			}
			if string(j.Result) != `{"n":21}` {
				t.Fatalf("parent's result %s, want the child's {\"n\":21}", j.Result)
			}
			if j.Attempt < 2 || j.Failures != 0 {
				t.Fatalf("parent attempt %d failures %d: want a second attempt after the wake and no failure", j.Attempt, j.Failures)
			}
			verifyClean(t, s)
		})
	}
}

// TestRemoteChildStepFenced: over the API, StartChild is fenced on the
// parent's lease. A retry by the same lease returns the same child; a stale
// lease is refused and enqueues nothing; GetChild answers the lease holder
// only, and only about its job's children. On both backends.
func TestRemoteChildStepFenced(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			url, clientTok, workerTok := serve(t, s)
			producer := dial(t, url, clientTok)
			w := dial(t, url, workerTok)
			ctx := t.Context()
			res, err := producer.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "parent", Queue: "fenced"}}})
			if err != nil {
				t.Fatal(err)
			}
			parent := res[0].Job.ID
			claim := func() store.OwnerParams {
				t.Helper()
				jobs, err := w.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"fenced"}, Limit: 1, LeaseTTL: time.Minute})
				if err != nil || len(jobs) != 1 || jobs[0].ID != parent {
					t.Fatalf("claim: %v %v", jobs, err)
				}
				o := store.OwnerParams{JobID: parent, LeaseID: jobs[0].LeaseID}
				if _, err := w.JobStart(ctx, &o); err != nil {
					t.Fatal(err)
				}
				return o
			}
			ss, err := store.Steps(w)
			if err != nil {
				t.Fatal(err)
			}
			start := func(o store.OwnerParams, seq int) (store.ChildStep, error) {
				return ss.JobStepChild(ctx, &store.JobStepChildParams{OwnerParams: o, Seq: seq, Name: "kid",
					Spec: lifecycle.Spec{Kind: "kid", Queue: "kids"}})
			}
			kids := func() int {
				t.Helper()
				jobs, err := producer.JobList(ctx, &store.JobListParams{Queue: "kids"})
				if err != nil {
					t.Fatal(err)
				}
				return len(jobs)
			}

			first := claim()
			got, err := start(first, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got.Child.ParentJobID != parent || got.Child.StepIndex != 1 || got.Child.Queue != "kids" || got.Step.Kind != store.StepChild {
				t.Fatalf("child step %+v", got)
			}
			again, err := start(first, 1) // a retry after a lost reply
			if err != nil || again.Child.ID != got.Child.ID || again.Step.RecordedAt != got.Step.RecordedAt {
				t.Fatalf("a retry returned %+v, %v; want child %s again", again, err, got.Child.ID)
			}
			lr := ss.(store.LeasedStepReader)
			c, err := lr.JobChildLeased(ctx, &first, got.Child.ID)
			if err != nil || c.ID != got.Child.ID || c.State != lifecycle.Queued {
				t.Fatalf("child read by the holder: %+v, %v", c, err)
			}
			if _, err := lr.JobChildLeased(ctx, &first, parent); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("reading a job that is not a child: %v, want not found", err)
			}

			// The lease moves on; the first one is stale.
			if _, err := w.JobRelease(ctx, &store.JobReleaseParams{OwnerParams: first, Reason: "test", Requeue: true}); err != nil {
				t.Fatal(err)
			}
			second := claim()
			before, err := producer.JobEvents(ctx, parent)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := start(first, 2); !errors.Is(err, store.ErrStaleLease) {
				t.Fatalf("a stale lease's child step: %v, want stale lease", err)
			}
			if _, err := lr.JobChildLeased(ctx, &first, got.Child.ID); !errors.Is(err, store.ErrStaleLease) {
				t.Fatalf("a stale lease's child read: %v, want stale lease", err)
			}
			after, err := producer.JobEvents(ctx, parent)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) || kids() != 1 {
				t.Fatalf("a stale child step wrote: %d events → %d, %d children", len(before), len(after), kids())
			}
			// The new lease replays step 1 from the record and goes on.
			if _, err := start(second, 1); !errors.Is(err, store.ErrStepConflict) {
				t.Fatalf("step 1 again by the new lease: %v, want step conflict", err)
			}
			next, err := start(second, 2)
			if err != nil || next.Child.ID == got.Child.ID || next.Step.Attempt != 2 || kids() != 2 {
				t.Fatalf("the new lease's child step: %+v, %v", next, err)
			}
			verifyClean(t, s)
		})
	}
}

func verifyClean(t *testing.T, s store.Store) {
	t.Helper()
	report, err := s.Verify(t.Context(), &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Findings) > 0 {
		t.Fatalf("verify: %v", report.Findings)
	}
}
