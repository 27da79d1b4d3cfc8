package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// Concurrent enqueues of one job, by dedupe key or by request id, race on a
// unique index; the losers retry, find the winner's job and return it. No
// caller sees the conflict, and one job exists.
func TestConcurrentEnqueuesOfOneJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		params func() *store.JobEnqueueParams
	}{
		{"same dedupe key", func() *store.JobEnqueueParams {
			return &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "test", Queue: "q", Tenant: "t", DedupeKey: "k"}}}
		}},
		{"same request id", func() *store.JobEnqueueParams {
			return &store.JobEnqueueParams{Jobs: specs(1, "q"), RequestID: "req-1"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t, postgres.Options{MaxConns: 16})
			const n = 16
			ids := make([]string, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					res, err := s.JobEnqueue(context.Background(), tc.params())
					if err == nil {
						ids[i] = res[0].Job.ID
					}
					errs[i] = err
				})
			}
			close(start)
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("enqueue %d: %v", i, errs[i])
				}
				if ids[i] != ids[0] {
					t.Fatalf("enqueue %d returned job %s, enqueue 0 job %s: want one job", i, ids[i], ids[0])
				}
			}
			jobs, err := s.JobList(context.Background(), &store.JobListParams{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%d jobs, %v; want 1", len(jobs), err)
			}
			verifyClean(t, s)
		})
	}
}
