package server_test

import (
	"errors"
	"testing"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestCompleteManyOmitJobs: with omit_jobs an accepted completion's result
// is empty and a refused one still says why; without it the stored job comes
// back.
func TestCompleteManyOmitJobs(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		ctx, w := t.Context(), e.worker(worker)
		a, b, c := e.claimed(client, worker), e.claimed(client, worker), e.claimed(client, worker)
		stale := &stintv1.Owner{JobId: b.Id, LeaseId: "not-the-lease", RequestId: "b-1"}
		res, err := w.CompleteMany(ctx, connect.NewRequest(&stintv1.CompleteManyRequest{OmitJobs: true,
			Completions: []*stintv1.CompleteRequest{{Owner: owner(a, "a-1")}, {Owner: stale}}}))
		if err != nil {
			t.Fatal(err)
		}
		if ok := res.Msg.Results[0]; ok.Job != nil || ok.ErrorCode != "" {
			t.Fatalf("accepted item with omit_jobs: job %v, error %q", ok.Job, ok.ErrorCode)
		}
		if bad := res.Msg.Results[1]; bad.ErrorCode != "failed_precondition" || !errors.Is(server.KindError(bad.ErrorKind), store.ErrStaleLease) {
			t.Fatalf("stale item with omit_jobs: %q %q, want failed_precondition stale_lease", bad.ErrorCode, bad.ErrorKind)
		}
		if j, err := s.JobGet(ctx, a.Id); err != nil || j.State != lifecycle.Succeeded {
			t.Fatalf("job a after the omitted reply: %v %v, want succeeded", j.State, err)
		}
		res, err = w.CompleteMany(ctx, connect.NewRequest(&stintv1.CompleteManyRequest{
			Completions: []*stintv1.CompleteRequest{{Owner: owner(c, "c-1")}}}))
		if err != nil {
			t.Fatal(err)
		}
		if j := res.Msg.Results[0].Job; j.GetId() != c.Id || j.State != stintv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("without omit_jobs: job %v, want %s succeeded", j, c.Id)
		}
	})
}
