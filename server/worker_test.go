package server_test

import (
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// claimed enqueues one job of tenant with the client token, claims and
// starts it with the worker token, and returns it.
func (e *env) claimed(client, worker string) *stintv1.Job {
	e.t.Helper()
	ctx := e.t.Context()
	payload, _ := structpb.NewStruct(map[string]any{"n": 1})
	if _, err := e.jobs(client).Enqueue(ctx, connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k", Payload: payload}})); err != nil {
		e.t.Fatal(err)
	}
	res, err := e.worker(worker).Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"default"}, Start: true, WorkerId: "w1"}))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(res.Msg.Jobs) != 1 {
		e.t.Fatalf("claimed %d jobs, want 1", len(res.Msg.Jobs))
	}
	return res.Msg.Jobs[0]
}

func owner(j *stintv1.Job, requestID string) *stintv1.Owner {
	return &stintv1.Owner{JobId: j.Id, LeaseId: j.LeaseId, RequestId: requestID}
}

// kindOf is the store condition a server error names.
func kindOf(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	return server.KindError(ce.Meta().Get(server.ErrorKindHeader))
}

// TestWorkerFlow: claim, start, heartbeat, complete over the wire; a stale
// fencing token is refused; a complete retried with the same request id
// gets the first answer and leaves one event.
func TestWorkerFlow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		ctx, w := t.Context(), e.worker(worker)
		j := e.claimed(client, worker)
		if j.State != stintv1.JobState_JOB_STATE_RUNNING || j.Queue != "default" || j.Tenant != "acme" {
			t.Fatalf("claimed job: state %s queue %q tenant %q", j.State, j.Queue, j.Tenant)
		}
		hb, err := w.Heartbeat(ctx, connect.NewRequest(&stintv1.HeartbeatRequest{Owner: owner(j, "hb-1"), LeaseTtl: durationpb.New(time.Minute)}))
		if err != nil {
			t.Fatal(err)
		}
		if hb.Msg.CancelRequested || hb.Msg.LeaseExpiresAt == nil {
			t.Fatalf("heartbeat reply: cancel %v expires %v", hb.Msg.CancelRequested, hb.Msg.LeaseExpiresAt)
		}

		stale := &stintv1.Owner{JobId: j.Id, LeaseId: "not-the-lease", RequestId: "c-0"}
		_, err = w.Complete(ctx, connect.NewRequest(&stintv1.CompleteRequest{Owner: stale}))
		if !errors.Is(kindOf(err), store.ErrStaleLease) || connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Fatalf("complete with a stale lease: %v, want stale_lease", err)
		}

		result := structpb.NewStringValue("done")
		complete := &stintv1.CompleteRequest{Owner: owner(j, "c-1"), Result: result, ExecutionMs: 5}
		first, err := w.Complete(ctx, connect.NewRequest(complete))
		if err != nil {
			t.Fatal(err)
		}
		again, err := w.Complete(ctx, connect.NewRequest(complete)) // the reply was lost; retry
		if err != nil {
			t.Fatalf("retried complete: %v", err)
		}
		if first.Msg.Job.Rev != again.Msg.Job.Rev || again.Msg.Job.State != stintv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("retry answered rev %d state %s, first rev %d", again.Msg.Job.Rev, again.Msg.Job.State, first.Msg.Job.Rev)
		}
		evs, err := s.JobEvents(ctx, j.Id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Type == lifecycle.EventSucceeded {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d succeeded events, want 1", n)
		}
	})
}

// TestLongPoll: a claim waiting on an empty queue gets the job enqueued
// while it waits. The wait's clock never moves, so only the store's wake-up
// can end it.
func TestLongPoll(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		clk := clock.NewManual(time.Now())
		e := start(t, s, server.Config{Clock: clk})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		got := make(chan *connect.Response[stintv1.ClaimResponse], 1)
		fail := make(chan error, 1)
		go func() {
			res, err := e.worker(worker).Claim(t.Context(), connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"q"}, Wait: durationpb.New(time.Minute)}))
			if err != nil {
				fail <- err
				return
			}
			got <- res
		}()
		// The claim is waiting once it asked the clock for its timeout.
		for {
			changed := clk.Changed()
			if clk.Waiters() > 0 {
				break
			}
			select {
			case err := <-fail:
				t.Fatal(err)
			case <-changed:
			case <-t.Context().Done():
				t.Fatal("the claim never started waiting")
			}
		}
		if _, err := e.jobs(client).Enqueue(t.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k", Queue: "q"}})); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-got:
			if len(res.Msg.Jobs) != 1 || res.Msg.Jobs[0].Queue != "q" {
				t.Fatalf("long poll returned %v", res.Msg.Jobs)
			}
		case err := <-fail:
			t.Fatal(err)
		case <-t.Context().Done():
			t.Fatal("the long poll never returned")
		}
	})
}
