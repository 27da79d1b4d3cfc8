package server_test

import (
	"testing"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestNotices: the Notices stream tells a worker of its tenant's queue
// wake-ups and of a cancel requested on its job, and tells another tenant
// nothing of them: the first thing B hears is its own queue.
func TestNotices(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		aClient, aWorker := e.token("a", store.RoleClient), e.token("a", store.RoleWorker)
		bClient, bWorker := e.token("b", store.RoleClient), e.token("b", store.RoleWorker)
		listen := func(secret string) *connect.ServerStreamForClient[stintv1.NoticesResponse] {
			st, err := e.worker(secret).Notices(t.Context(), connect.NewRequest(&stintv1.NoticesRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if !st.Receive() || st.Msg().Queue != "" || st.Msg().JobId != "" {
				t.Fatalf("the stream did not start listening: %v", st.Err())
			}
			return st
		}
		next := func(st *connect.ServerStreamForClient[stintv1.NoticesResponse]) *stintv1.NoticesResponse {
			t.Helper()
			if !st.Receive() {
				t.Fatalf("stream ended: %v", st.Err())
			}
			return st.Msg()
		}
		a, b := listen(aWorker), listen(bWorker)

		j := e.claimed(aClient, aWorker) // wakes queue default of tenant a
		if m := next(a); m.Queue != "default" {
			t.Fatalf("a heard %v, want queue default", m)
		}
		if _, err := e.jobs(aClient).CancelJob(t.Context(), connect.NewRequest(&stintv1.CancelJobRequest{Id: j.Id})); err != nil {
			t.Fatal(err)
		}
		// On PostgreSQL a wake-up may come twice (this process's own, and the
		// NOTIFY it hears back): skip repeats of queue default.
		m := next(a)
		for m.Queue == "default" {
			m = next(a)
		}
		if m.JobId != j.Id {
			t.Fatalf("a heard %v, want job %s", m, j.Id)
		}
		if _, err := e.jobs(bClient).Enqueue(t.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k", Queue: "z"}})); err != nil {
			t.Fatal(err)
		}
		if m := next(b); m.Queue != "z" || m.JobId != "" {
			t.Fatalf("b heard %v first, want its own queue z", m)
		}
	})
}
