package stint_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// TestStoreDefaultsEveryGoPath: job defaults kept in the database
// (Client.LimitQueue with DefaultMaxAttempts, ...) reach the jobs the Go
// client enqueues, on both backends; the client's own ClientConfig defaults
// still come first. Children (Job.StartChild) enqueue through the same
// store call.
func TestStoreDefaultsEveryGoPath(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		five, ten, minute := 5, 10, time.Minute
		if _, err := e.client.LimitQueue(ctx, "mail", store.QueueLimits{DefaultMaxAttempts: &five, DefaultTimeout: &minute, DefaultPriority: &ten}); err != nil {
			t.Fatal(err)
		}
		j := e.enqueue(stint.Spec{Kind: "child", Queue: "mail"})
		if j.MaxAttempts != 5 || j.Timeout.D() != time.Minute || j.Priority != 10 {
			t.Errorf("client enqueue: max_attempts %d timeout %s priority %d, want the queue's 5, 1m, 10", j.MaxAttempts, j.Timeout.D(), j.Priority)
		}
		own, err := stint.NewClient(e.s, stint.ClientConfig{Clock: e.clk, QueueDefaults: map[string]stint.JobDefaults{"mail": {MaxAttempts: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := own.Enqueue(ctx, stint.Spec{Kind: "child", Queue: "mail"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Job.MaxAttempts != 2 || res.Job.Priority != 10 {
			t.Errorf("client with its own defaults: max_attempts %d priority %d, want its 2 and the store's 10", res.Job.MaxAttempts, res.Job.Priority)
		}

	})
}
