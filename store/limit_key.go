package store

import (
	"context"
	"maps"

	"github.com/stint-dev/stint/lifecycle"
)

// ConcurrencyKeyEnv is the env key naming a job's concurrency key.
const ConcurrencyKeyEnv = "stint.concurrency_key"

// claimKeyed claims up to q.Limit jobs of q's one queue in claim order,
// skipping the jobs whose concurrency key already has limit jobs leased, so
// a busy key never holds back the keys behind it. It reads a window of
// candidates ten times the claim, and widens it (up to MaxBatch) while the
// window is full of jobs it must skip.
func claimKeyed(ctx context.Context, tx Tx, q ClaimQuery, limit int) ([]lifecycle.Job, error) {
	leased, err := tx.JobList(ctx, JobListParams{Queue: q.Queues[0], Limit: MaxBatch,
		States: []lifecycle.State{lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested}})
	if err != nil {
		return nil, err
	}
	base := map[string]int{}
	for _, j := range leased {
		base[j.Env[ConcurrencyKeyEnv]]++
	}
	want := q.Limit
	for window := max(10*want, 100); ; window = min(4*window, MaxBatch) {
		cq := q
		cq.Limit = window
		cands, err := tx.JobClaimable(ctx, cq)
		if err != nil {
			return nil, err
		}
		running := maps.Clone(base)
		var out []lifecycle.Job
		for _, j := range cands {
			key := j.Env[ConcurrencyKeyEnv]
			if key != "" && running[key] >= limit {
				continue
			}
			running[key]++
			if out = append(out, j); len(out) == want {
				break
			}
		}
		if len(out) == want || len(cands) < window || window == MaxBatch {
			return out, nil
		}
	}
}
