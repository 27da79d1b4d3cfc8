package server_test

import (
	"errors"
	"testing"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestTenantSweep: every RPC called by tenant B with tenant A's job id (and
// even A's fencing token) answers NotFound and changes nothing; B's lists,
// claims and counts never see A's jobs.
func TestTenantSweep(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		aClient, aWorker, aAdmin := e.token("a", store.RoleClient), e.token("a", store.RoleWorker), e.token("a", store.RoleAdmin)
		bAdmin := e.token("b", store.RoleAdmin)
		running := e.claimed(aClient, aWorker)
		queued, err := e.jobs(aClient).Enqueue(ctx, connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k"}}))
		if err != nil {
			t.Fatal(err)
		}
		toks, err := e.admin(aAdmin).ListTokens(ctx, connect.NewRequest(&stintv1.ListTokensRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]int64{}
		for _, id := range []string{running.Id, queued.Msg.Job.Id} {
			j, err := s.JobGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			before[id] = j.Rev
		}

		jobs, w, adm := e.jobs(bAdmin), e.worker(bAdmin), e.admin(bAdmin)
		o := owner(running, "b-1")
		calls := map[string]func() error{
			"GetJob": func() error {
				_, err := jobs.GetJob(ctx, connect.NewRequest(&stintv1.GetJobRequest{Id: running.Id}))
				return err
			},
			"ListEvents": func() error {
				_, err := jobs.ListEvents(ctx, connect.NewRequest(&stintv1.ListEventsRequest{JobId: running.Id}))
				return err
			},
			"CancelSoft": func() error {
				_, err := jobs.CancelJob(ctx, connect.NewRequest(&stintv1.CancelJobRequest{Id: running.Id}))
				return err
			},
			"CancelHard": func() error {
				_, err := jobs.CancelJob(ctx, connect.NewRequest(&stintv1.CancelJobRequest{Id: queued.Msg.Job.Id, Hard: true}))
				return err
			},
			"ReplayJob": func() error {
				_, err := jobs.ReplayJob(ctx, connect.NewRequest(&stintv1.ReplayJobRequest{Id: running.Id}))
				return err
			},
			"Start": func() error { _, err := w.Start(ctx, connect.NewRequest(&stintv1.StartRequest{Owner: o})); return err },
			"Heartbeat": func() error {
				_, err := w.Heartbeat(ctx, connect.NewRequest(&stintv1.HeartbeatRequest{Owner: o}))
				return err
			},
			"Checkpoint": func() error {
				_, err := w.Checkpoint(ctx, connect.NewRequest(&stintv1.CheckpointRequest{Owner: o}))
				return err
			},
			"Complete": func() error {
				_, err := w.Complete(ctx, connect.NewRequest(&stintv1.CompleteRequest{Owner: o}))
				return err
			},
			"Fail": func() error {
				_, err := w.Fail(ctx, connect.NewRequest(&stintv1.FailRequest{Owner: o, ErrorCode: "x"}))
				return err
			},
			"Halt": func() error { _, err := w.Halt(ctx, connect.NewRequest(&stintv1.HaltRequest{Owner: o})); return err },
			"AckCancel": func() error {
				_, err := w.AckCancel(ctx, connect.NewRequest(&stintv1.AckCancelRequest{Owner: o}))
				return err
			},
			"Release": func() error {
				_, err := w.Release(ctx, connect.NewRequest(&stintv1.ReleaseRequest{Owner: o, Requeue: true}))
				return err
			},
			"DeadLetter": func() error {
				_, err := w.DeadLetter(ctx, connect.NewRequest(&stintv1.DeadLetterRequest{Owner: o, ReasonCode: "policy_violation"}))
				return err
			},
			"RevokeToken": func() error {
				_, err := adm.RevokeToken(ctx, connect.NewRequest(&stintv1.RevokeTokenRequest{Id: toks.Msg.Tokens[0].Id}))
				return err
			},
			"CompleteMany": func() error {
				res, err := w.CompleteMany(ctx, connect.NewRequest(&stintv1.CompleteManyRequest{Completions: []*stintv1.CompleteRequest{{Owner: o}}}))
				if err != nil {
					return err
				}
				if r := res.Msg.Results[0]; r.ErrorCode != connect.CodeNotFound.String() {
					t.Errorf("CompleteMany item: %q %q, want not_found", r.ErrorCode, r.ErrorMessage)
				}
				return connect.NewError(connect.CodeNotFound, errors.New("item not found"))
			},
		}
		for name, call := range calls {
			t.Run(name, func(t *testing.T) {
				if err := call(); connect.CodeOf(err) != connect.CodeNotFound {
					t.Fatalf("%s with another tenant's id: %v, want not_found", name, err)
				}
			})
		}
		t.Run("nothing changed", func(t *testing.T) {
			for id, rev := range before {
				j, err := s.JobGet(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if j.Rev != rev {
					t.Fatalf("job %s went from rev %d to %d (%s)", id, rev, j.Rev, j.State)
				}
			}
		})
		t.Run("lists and claims see nothing", func(t *testing.T) {
			list, err := jobs.ListJobs(ctx, connect.NewRequest(&stintv1.ListJobsRequest{}))
			if err != nil || len(list.Msg.Jobs) != 0 {
				t.Fatalf("B lists %d jobs (%v), want 0", len(list.Msg.GetJobs()), err)
			}
			claim, err := w.Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"default"}}))
			if err != nil || len(claim.Msg.Jobs) != 0 {
				t.Fatalf("B claimed %d jobs (%v), want 0", len(claim.Msg.GetJobs()), err)
			}
			depth, err := adm.QueueDepth(ctx, connect.NewRequest(&stintv1.QueueDepthRequest{}))
			if err != nil || len(depth.Msg.Counts) != 0 {
				t.Fatalf("B counts %v (%v), want none", depth.Msg.GetCounts(), err)
			}
			mine, err := e.jobs(aClient).ListJobs(ctx, connect.NewRequest(&stintv1.ListJobsRequest{}))
			if err != nil || len(mine.Msg.Jobs) != 2 {
				t.Fatalf("A lists %d jobs (%v), want 2", len(mine.Msg.GetJobs()), err)
			}
		})
	})
}
