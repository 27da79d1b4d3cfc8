package stinttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// order is a handler of three steps; variant changes it the way a code
// change might.
func order(variant string, ran *int) stint.HandlerFunc {
	return func(ctx context.Context, j *stint.Job) error {
		count := func(v int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { *ran++; return v, nil }
		}
		price, err := stint.Step(ctx, j, "price", count(j.Rand().IntN(100)))
		if err != nil {
			return err
		}
		name := "charge"
		if variant == "renamed" {
			name = "charge-v2"
		}
		fee, err := stint.Step(ctx, j, name, count(3))
		if err != nil {
			return err
		}
		if variant != "fewer" {
			if _, err := stint.Step(ctx, j, "ship", count(1)); err != nil {
				return err
			}
		}
		if variant == "more" {
			if _, err := stint.Step(ctx, j, "notify", count(1)); err != nil {
				return err
			}
		}
		total := price + fee
		if variant == "result" {
			total++
		}
		return j.SetResult(total)
	}
}

// TestReplayGolden records a job, exports its golden file as `stint jobs
// export-steps` does, and replays the handler and changed handlers against
// it: the same code replays cleanly without running a step; each change is
// reported at its first divergence.
func TestReplayGolden(t *testing.T) {
	s := stinttest.NewStore(t)
	mux := stint.NewMux()
	var ran int
	mux.Handle("order", order("", &ran))
	j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "order", Payload: json.RawMessage(`{"id":7}`)})
	if j.State != stint.Succeeded {
		t.Fatalf("job %s: %+v", j.State, j.LastError)
	}
	ss, err := store.Steps(s)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := ss.JobSteps(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(step.GoldenOf(j, steps))
	path := filepath.Join(t.TempDir(), "order.golden.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	ran = 0
	stinttest.ReplayGolden(t, path, order("", &ran))
	if ran != 0 {
		t.Errorf("the replay ran %d step functions; it must run none", ran)
	}
	for variant, want := range map[string]string{
		"renamed": `step 2 is run "charge"`,
		"more":    `new run step`,
		"fewer":   `finished after 2 steps`,
		"result":  `the result is`,
	} {
		t.Run(variant, func(t *testing.T) {
			var n int
			err := stinttest.ReplayGoldenErr(path, order(variant, &n))
			var d *stint.Divergence
			if !errors.As(err, &d) || !strings.Contains(err.Error(), want) {
				t.Fatalf("replay of the %s handler: %v; want a divergence saying %q", variant, err, want)
			}
		})
	}
}
