package bus

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// A SUCCEEDED result completes from the record the bridge kept at dispatch;
// when the job moved on behind the bridge's back, the row decides: a
// heartbeat (same lease) lets the result apply, a hard cancel (terminal)
// makes it a late result that changes nothing.
func TestBusWorkerResultAfterTheJobMovedOn(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := uniqueConfig(t, machineNATS)
			cfg.WorkerTopics = []string{"job.chat.*"}
			h := newHarness(t, open(t), cfg)
			got := make(chan Dispatch, 2)
			h.runWorker("job.chat.*", func(d Dispatch) *JobResult { got <- d; return nil })
			ctx := t.Context()

			h.publish("job.chat.simple", JobRequest{JobID: "beat"})
			d := <-got
			owner := store.OwnerParams{JobID: d.StintJobID, LeaseID: d.LeaseID}
			if _, err := h.st.JobHeartbeat(ctx, &store.JobHeartbeatParams{OwnerParams: owner, LeaseTTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			h.result(d.Topic, *succeed(d))
			eventually(t, "the result after a heartbeat", func() bool { return testutil.ToFloat64(h.b.m.applied.WithLabelValues("SUCCEEDED")) == 1 })
			j, err := h.st.JobGet(ctx, d.StintJobID)
			if err != nil || j.State != lifecycle.Succeeded || j.ResultPtr != "s3://out/beat" {
				t.Fatalf("after a heartbeat the result should complete the job: %s %q %v", j.State, j.ResultPtr, err)
			}

			h.publish("job.chat.simple", JobRequest{JobID: "gone"})
			d = <-got
			if _, err := h.st.JobCancel(ctx, &store.JobCancelParams{JobID: d.StintJobID, Hard: true, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			cancelled, err := h.st.JobGet(ctx, d.StintJobID)
			if err != nil || !cancelled.State.Terminal() {
				t.Fatalf("a hard cancel should end the job: %s %v", cancelled.State, err)
			}
			h.result(d.Topic, *succeed(d))
			eventually(t, "the late result", func() bool { return testutil.ToFloat64(h.b.m.ignored.WithLabelValues(ignoredTerminal)) == 1 })
			j, err = h.st.JobGet(ctx, d.StintJobID)
			if err != nil || j.State != cancelled.State || j.Rev != cancelled.Rev {
				t.Fatalf("a result for an ended job changed it: %s rev %d, want %s rev %d (%v)", j.State, j.Rev, cancelled.State, cancelled.Rev, err)
			}
			if testutil.ToFloat64(h.b.m.applied.WithLabelValues("SUCCEEDED")) != 1 {
				t.Fatal("the late result was counted applied")
			}
			eventually(t, "the SUCCEEDED event with its result", func() bool {
				for _, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
					if m.Result.JobID == "beat" && m.Result.Status == StatusSucceeded && m.Result.ResultPtr == "s3://out/beat" && m.Result.ExecutionMS == 7 {
						return true
					}
				}
				return false
			})
			verifyClean(t, h.st)
		})
	}
}
