package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestQueueDefaultsOverAPI: a tenant's admin sets its queue's job defaults
// with LimitQueue; the tenant's enqueues through JobService get them, a
// job that says its own keeps it, and another tenant's queue of the same
// name is untouched; a bad default is invalid_argument. Both backends.
func TestQueueDefaultsOverAPI(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		admin, client, other := e.admin(e.token("acme", store.RoleAdmin)), e.jobs(e.token("acme", store.RoleClient)), e.jobs(e.token("zeta", store.RoleClient))
		five, ten := int32(5), int32(-10)
		res, err := admin.LimitQueue(ctx, connect.NewRequest(&stintv1.LimitQueueRequest{Name: "mail",
			DefaultMaxAttempts: &five, DefaultTimeout: durationpb.New(time.Minute), DefaultPriority: &ten}))
		if err != nil {
			t.Fatal(err)
		}
		if q := res.Msg.Queue; q.DefaultMaxAttempts != 5 || q.DefaultTimeout.AsDuration() != time.Minute || q.DefaultPriority != -10 {
			t.Errorf("LimitQueue answered %+v", q)
		}
		enqueue := func(jobs stintv1connect.JobServiceClient, spec *stintv1.Spec) *stintv1.Job {
			t.Helper()
			r, err := jobs.Enqueue(ctx, connect.NewRequest(&stintv1.EnqueueRequest{Job: spec}))
			if err != nil {
				t.Fatal(err)
			}
			return r.Msg.Job
		}
		if j := enqueue(client, &stintv1.Spec{Kind: "send", Queue: "mail"}); j.MaxAttempts != 5 || j.Timeout.AsDuration() != time.Minute || j.Priority != -10 {
			t.Errorf("acme's job: max_attempts %d timeout %s priority %d, want 5, 1m, -10", j.MaxAttempts, j.Timeout.AsDuration(), j.Priority)
		}
		if j := enqueue(client, &stintv1.Spec{Kind: "send", Queue: "mail", MaxAttempts: 2}); j.MaxAttempts != 2 {
			t.Errorf("a job's own max_attempts became %d", j.MaxAttempts)
		}
		if j := enqueue(other, &stintv1.Spec{Kind: "send", Queue: "mail"}); j.MaxAttempts != 3 || j.Priority != 0 {
			t.Errorf("zeta's job got acme's defaults: max_attempts %d priority %d", j.MaxAttempts, j.Priority)
		}
		bad := int32(-1)
		if _, err := admin.LimitQueue(ctx, connect.NewRequest(&stintv1.LimitQueueRequest{Name: "mail", DefaultMaxAttempts: &bad})); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("a negative default: %v, want invalid_argument", err)
		}
	})
}
