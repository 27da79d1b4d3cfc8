package store_test

import (
	"errors"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Per-job request ids: many requests in one transaction, each idempotent
// on its own and the same job a single enqueue under its id makes; bad ids
// refuse the batch with nothing written. Both backends alike.
func TestEnqueueRequestIDs(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			ctx := t.Context()
			spec := func(k string) lifecycle.Spec { return lifecycle.Spec{Kind: k, Queue: "q"} }
			one, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{ActorID: "bus", RequestID: "r2", Jobs: []lifecycle.Spec{spec("b")}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{ActorID: "bus", RequestIDs: []string{"r1", "r2", "r3"},
				Jobs: []lifecycle.Spec{spec("a"), spec("b"), spec("c")}})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Existing || !res[1].Existing || res[2].Existing || res[1].Job.ID != one[0].Job.ID {
				t.Fatalf("batch: %+v; r2 was enqueued alone before as %s", res, one[0].Job.ID)
			}
			again, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{ActorID: "bus", RequestID: "r3", Jobs: []lifecycle.Spec{spec("c")}})
			if err != nil || !again[0].Existing || again[0].Job.ID != res[2].Job.ID {
				t.Fatalf("r3 alone after the batch: %+v, %v; want the batch's job %s", again, err, res[2].Job.ID)
			}
			evs, err := s.JobEvents(ctx, res[0].Job.ID)
			if err != nil || len(evs) != 1 || evs[0].RequestID != "r1" {
				t.Fatalf("r1's enqueued event: %+v, %v", evs, err)
			}
			before, _ := s.JobList(ctx, &store.JobListParams{})
			for name, p := range map[string]*store.JobEnqueueParams{
				"both":        {RequestID: "x", RequestIDs: []string{"y"}, Jobs: []lifecycle.Spec{spec("a")}},
				"count":       {RequestIDs: []string{"y"}, Jobs: []lifecycle.Spec{spec("a"), spec("b")}},
				"empty":       {RequestIDs: []string{"y", ""}, Jobs: []lifecycle.Spec{spec("a"), spec("b")}},
				"repeated":    {RequestIDs: []string{"y", "y"}, Jobs: []lifecycle.Spec{spec("a"), spec("a")}},
				"conflicting": {ActorID: "bus", RequestIDs: []string{"z", "r1"}, Jobs: []lifecycle.Spec{spec("z"), spec("other")}},
			} {
				_, err := s.JobEnqueue(ctx, p)
				want := lifecycle.ErrValidation
				if name == "conflicting" {
					want = lifecycle.ErrRequestConflict
				}
				if !errors.Is(err, want) || err.Error() == "" {
					t.Errorf("%s: %v, want %v", name, err, want)
				}
			}
			after, _ := s.JobList(ctx, &store.JobListParams{})
			if len(after) != len(before) {
				t.Fatalf("refused batches wrote jobs: %d → %d", len(before), len(after))
			}
		})
	}
}
