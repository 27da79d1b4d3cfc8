package demo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// TestWorkflow: demo.workflow's three steps each run once, across the
// durable sleep that hands the lease back between steps 2 and 3.
func TestWorkflow(t *testing.T) {
	t.Parallel()
	s := stinttest.NewStore(t)
	log := filepath.Join(t.TempDir(), "steps.log")
	stinttest.StartPool(t, s, newMux(), stint.Config{}) // with the scheduler, which wakes the sleeper
	res, err := s.JobEnqueue(context.Background(), &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: demo.KindWorkflow,
		Payload: json.RawMessage(fmt.Sprintf(`{"sleep_ms": 1, "log": %q}`, log))}}})
	if err != nil {
		t.Fatal(err)
	}
	var j stint.JobRecord
	deadline := time.Now().Add(stinttest.Patience)
	for j.State != stint.Succeeded && time.Now().Before(deadline) {
		<-time.After(time.Millisecond)
		if j, err = s.JobGet(context.Background(), res[0].Job.ID); err != nil {
			t.Fatal(err)
		}
	}
	// (Attempt is 2 when the sleep handed the lease back, 1 when a slow
	// machine had already slept its millisecond by the time it looked.)
	if j.State != stint.Succeeded || string(j.Result) != `{"steps":["step1","step2","step3"]}` {
		t.Fatalf("job %s attempt %d result %s", j.State, j.Attempt, j.Result)
	}
	b, err := os.ReadFile(log)
	if err != nil || string(b) != "step1\nstep2\nstep3\n" {
		t.Fatalf("log %q, %v; want each step once", b, err)
	}
	ss, _ := store.Steps(s)
	recs, err := ss.JobSteps(context.Background(), j.ID)
	if err != nil || len(recs) != 4 || recs[2].Kind != store.StepSleep {
		t.Fatalf("steps %+v %v; want step1, step2, sleep, step3", recs, err)
	}
}
