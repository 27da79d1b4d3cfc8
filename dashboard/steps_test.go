package dashboard_test

import (
	"context"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stinttest"
)

// TestJobSteps shows the recorded steps of a job run as durable steps on
// its page, in order, placed in time, without their lease.
func TestJobSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	mux := stint.NewMux()
	mux.HandleFunc("stepped", func(ctx context.Context, j *stint.Job) error {
		n, err := stint.Step(ctx, j, "fetch", func(context.Context) (int, error) { return 42, nil })
		if err != nil {
			return err
		}
		_, err = stint.Step(ctx, j, "store", func(context.Context) (int, error) { return n + 1, nil })
		return err
	})
	job := stinttest.WorkOne(t, f.s, mux, stint.Spec{Kind: "stepped"})
	if job.State != lifecycle.Succeeded {
		t.Fatalf("the stepped job ended %s", job.State)
	}
	var page struct {
		Steps []struct {
			Seq     int    `json:"seq"`
			Name    string `json:"name"`
			LeaseID string `json:"lease_id"`
			Started string `json:"started"`
		} `json:"steps"`
	}
	if code := f.call(t, "GET", "api/jobs/"+job.ID, f.tokens["client"], "", &page); code != 200 {
		t.Fatalf("job page: %d", code)
	}
	if len(page.Steps) != 2 || page.Steps[0].Name != "fetch" || page.Steps[1].Seq != 2 || page.Steps[0].Started == "" {
		t.Fatalf("steps: %+v, want fetch then store, placed in time", page.Steps)
	}
	for _, s := range page.Steps {
		if s.LeaseID != "" {
			t.Errorf("step %s shows its lease", s.Name)
		}
	}
	var plain map[string]any
	f.call(t, "GET", "api/jobs/"+f.queued, f.tokens["admin"], "", &plain)
	if _, ok := plain["steps"]; ok {
		t.Errorf("a job without steps has a steps list")
	}
}
