package bus

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
)

// TestIntakeGetsStoreDefaults: a request that names no max attempts or
// timeout becomes a job with the job defaults kept in the database (its
// kind's, then the bus queue's), as every enqueue path does.
func TestIntakeGetsStoreDefaults(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			qs, err := store.Queues(st)
			if err != nil {
				t.Fatal(err)
			}
			seven, minute := 7, time.Minute
			if _, err := qs.QueueLimit(t.Context(), store.KindLimitName("job.chat.simple"), store.QueueLimits{DefaultMaxAttempts: &seven}); err != nil {
				t.Fatal(err)
			}
			if _, err := qs.QueueLimit(t.Context(), "bus", store.QueueLimits{DefaultTimeout: &minute}); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, st, uniqueConfig(t, machineNATS))
			h.publish("job.chat.simple", JobRequest{JobID: "req-1", Payload: []byte(`{"q":"hi"}`)})
			eventually(t, "the request to become a job", func() bool { return len(jobs(t, st)) == 1 })
			if j := jobs(t, st)[0]; j.MaxAttempts != 7 || j.Timeout.D() != time.Minute {
				t.Errorf("the bridged job has max_attempts %d and timeout %s, want the kind's 7 and the queue's 1m", j.MaxAttempts, j.Timeout.D())
			}
			verifyClean(t, st)
		})
	}
}
