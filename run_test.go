package stint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// TestRunWithPool runs a CI-shaped run through a real pool on both backends:
// a planner adds the test jobs from its handler, lint fails but may, and
// deploy runs after everything else; the run succeeds.
func TestRunWithPool(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		mux := stint.NewMux()
		ok := func(context.Context, *stint.Job) error { return nil }
		mux.HandleFunc("build", ok)
		mux.HandleFunc("test", ok)
		mux.HandleFunc("deploy", ok)
		mux.HandleFunc("lint", func(context.Context, *stint.Job) error {
			return stint.Permanent(errors.New("3 lint findings"))
		})
		mux.HandleFunc("plan", func(ctx context.Context, j *stint.Job) error {
			_, err := j.AddToRun(ctx,
				stint.RunJob{Name: "unit", Spec: stint.Spec{Kind: "test"}, DependsOn: []string{"build"}},
				stint.RunJob{Name: "e2e", Spec: stint.Spec{Kind: "test"}, DependsOn: []string{"unit"}})
			return err
		})
		v, err := e.client.CreateRun(ctx, stint.RunSpec{Name: "ci"}, []stint.RunJob{
			{Name: "plan", Spec: stint.Spec{Kind: "plan"}, Planner: true},
			{Name: "build", Spec: stint.Spec{Kind: "build"}},
			{Name: "lint", Spec: stint.Spec{Kind: "lint", MaxAttempts: 1}, DependsOn: []string{"build"}, AllowFailure: true},
			{Name: "deploy", Spec: stint.Spec{Kind: "deploy"}, DependsOn: []string{"plan", "lint", "build"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		e.start(mux, e.config())
		eventually(t, "the run ended", func() bool {
			got, err := e.client.GetRun(ctx, v.Run.ID)
			return err == nil && got.Run.State.Terminal()
		})
		got, _ := e.client.GetRun(ctx, v.Run.ID)
		if got.Run.State != lifecycle.RunSucceeded || len(got.Jobs) != 6 {
			t.Fatalf("run %s (%s) with %d jobs: %+v", got.Run.State, got.Run.Reason, len(got.Jobs), got.Jobs)
		}
		for _, j := range got.Jobs {
			want := lifecycle.Succeeded
			if j.Name == "lint" {
				want = lifecycle.Failed
			}
			if j.State != want {
				t.Fatalf("job %s is %s, want %s", j.Name, j.State, want)
			}
		}
	})
}
