package server_test

import (
	"testing"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestGetJobDerived: GetJob answers the lease state and the failure stage
// (derived, never stored) as they change, on both backends; a heartbeat
// that enters a phase leaves it in the job's events.
func TestGetJobDerived(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		ctx, w, jobs := t.Context(), e.worker(worker), e.jobs(client)
		j := e.claimed(client, worker)
		get := func() *stintv1.GetJobResponse {
			t.Helper()
			res, err := jobs.GetJob(ctx, connect.NewRequest(&stintv1.GetJobRequest{Id: j.Id}))
			if err != nil {
				t.Fatal(err)
			}
			return res.Msg
		}
		if got := get(); got.LeaseState != "active" || got.FailureStage != "" {
			t.Errorf("a running job: lease %q stage %q, want active and none", got.LeaseState, got.FailureStage)
		}
		if _, err := w.Heartbeat(ctx, connect.NewRequest(&stintv1.HeartbeatRequest{Owner: owner(j, "hb-1"), Phase: "uploading"})); err != nil {
			t.Fatal(err)
		}
		if _, err := w.DeadLetter(ctx, connect.NewRequest(&stintv1.DeadLetterRequest{Owner: owner(j, "dl-1"), ReasonCode: "infrastructure_failure", ErrorMessage: "the bucket is gone"})); err != nil {
			t.Fatal(err)
		}
		if got := get(); got.LeaseState != "completed" || got.FailureStage != "output" {
			t.Errorf("dead-lettered while uploading: lease %q stage %q, want completed and output", got.LeaseState, got.FailureStage)
		}
		evs, err := jobs.ListEvents(ctx, connect.NewRequest(&stintv1.ListEventsRequest{JobId: j.Id}))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range evs.Msg.Events {
			if ev.Details.GetStructValue().GetFields()["phase"].GetStringValue() == "uploading" {
				found = true
			}
		}
		if !found {
			t.Errorf("no event records the phase uploading: %v", evs.Msg.Events)
		}
	})
}
