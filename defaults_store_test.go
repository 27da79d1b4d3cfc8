package stint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
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

// TestStoreBackoffReachesPools: a queue's default backoff kept in the
// database (Client.LimitQueue with DefaultBackoff*) schedules the retry
// of an attempt a Go pool fails when the pool names no backoff of its
// own; a pool that sets Config.Backoff keeps its own. On both backends.
func TestStoreBackoffReachesPools(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		hour, two := time.Hour, 2.0
		if _, err := e.client.LimitQueue(ctx, "mail", store.QueueLimits{DefaultBackoffBase: &hour, DefaultBackoffFactor: &two, DefaultBackoffMax: &hour}); err != nil {
			t.Fatal(err)
		}
		own := lifecycle.Backoff{Base: 3 * time.Hour, Max: 3 * time.Hour}
		for _, c := range []struct {
			name, kind string
			pool       lifecycle.Backoff
			want       lifecycle.Backoff
		}{
			{"the store's", "fails.store", lifecycle.Backoff{}, lifecycle.Backoff{Base: hour, Factor: two, Max: hour}},
			{"the pool's own", "fails.own", own, own},
		} {
			t.Run(c.name, func(t *testing.T) {
				mux := stint.NewMux()
				mux.HandleFunc(c.kind, func(context.Context, *stint.Job) error { return errors.New("boom") })
				cfg := e.config()
				cfg.Backoff, cfg.Queues = c.pool, map[string]int{"mail": 2}
				e.start(mux, cfg)
				j := e.enqueue(stint.Spec{Kind: c.kind, Queue: "mail"})
				j = e.waitState(j.ID, stint.Retrying)
				if at := j.UpdatedAt.Add(c.want.Delay(j.ID, 1)).Truncate(time.Microsecond); !j.RunAt.Equal(at) {
					t.Errorf("retry at %s (%s after the fail), want %s (backoff %+v)", j.RunAt, j.RunAt.Sub(j.UpdatedAt), at, c.want)
				}
			})
		}
	})
}
