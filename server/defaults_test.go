package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stint-dev/stint/lifecycle"
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

// TestQueueBackoffOverAPI: a tenant's admin sets its queue's default
// backoff with LimitQueue (and sees it in ListQueues); a worker's Fail
// that names no backoff is retried on it, one that names its own keeps
// it; a negative backoff or a max below the base is invalid_argument and
// changes nothing. Both backends.
func TestQueueBackoffOverAPI(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		admin, client, worker := e.admin(e.token("acme", store.RoleAdmin)), e.jobs(e.token("acme", store.RoleClient)), e.worker(e.token("acme", store.RoleWorker))
		three := 3.0
		want := store.SpecDefaults{BackoffBase: time.Hour, BackoffFactor: 3, BackoffMax: 2 * time.Hour}
		if _, err := admin.LimitQueue(ctx, connect.NewRequest(&stintv1.LimitQueueRequest{Name: "mail",
			DefaultBackoffBase: durationpb.New(time.Hour), DefaultBackoffFactor: &three, DefaultBackoffMax: durationpb.New(2 * time.Hour)})); err != nil {
			t.Fatal(err)
		}
		for name, req := range map[string]*stintv1.LimitQueueRequest{
			"negative base":  {Name: "mail", DefaultBackoffBase: durationpb.New(-time.Second)},
			"max below base": {Name: "mail", DefaultBackoffMax: durationpb.New(time.Minute)},
		} {
			if _, err := admin.LimitQueue(ctx, connect.NewRequest(req)); connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("%s: %v, want invalid_argument", name, err)
			}
		}
		list, err := admin.ListQueues(ctx, connect.NewRequest(&stintv1.ListQueuesRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range list.Msg.Queues {
			if q := q.Settings; q.Name == "mail" && (q.DefaultBackoffBase.AsDuration() != want.BackoffBase || q.DefaultBackoffFactor != want.BackoffFactor || q.DefaultBackoffMax.AsDuration() != want.BackoffMax) {
				t.Errorf("ListQueues: %+v, want %+v", q, want)
			}
		}
		own := &stintv1.Backoff{Base: durationpb.New(5 * time.Hour), Max: durationpb.New(5 * time.Hour)}
		for _, c := range []struct {
			name    string
			backoff *stintv1.Backoff
			want    lifecycle.Backoff
		}{{"the queue's", nil, want.Backoff()}, {"its own", own, lifecycle.Backoff{Base: 5 * time.Hour, Max: 5 * time.Hour}}} {
			if _, err := client.Enqueue(ctx, connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "send", Queue: "mail"}})); err != nil {
				t.Fatal(err)
			}
			claim, err := worker.Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"mail"}, Start: true}))
			if err != nil || len(claim.Msg.Jobs) != 1 {
				t.Fatalf("claim: %v", err)
			}
			j := claim.Msg.Jobs[0]
			if _, err := worker.Fail(ctx, connect.NewRequest(&stintv1.FailRequest{Owner: &stintv1.Owner{JobId: j.Id, LeaseId: j.LeaseId, RequestId: "fail-" + j.Id}, ErrorCode: "boom", Backoff: c.backoff})); err != nil {
				t.Fatal(err)
			}
			got, err := s.JobGet(ctx, j.Id)
			if err != nil {
				t.Fatal(err)
			}
			if at := got.UpdatedAt.Add(c.want.Delay(j.Id, 1)).Truncate(time.Microsecond); got.State != lifecycle.Retrying || !got.RunAt.Equal(at) {
				t.Errorf("%s: %s, retry at %s (%s after the fail), want %s", c.name, got.State, got.RunAt, got.RunAt.Sub(got.UpdatedAt), at)
			}
		}
	})
}
