package store

import (
	"context"
	"maps"

	"github.com/stint-dev/stint/lifecycle"
)

// ConcurrencyKeyEnv is the env key naming a job's concurrency key.
const ConcurrencyKeyEnv = "stint.concurrency_key"

// claimFunc reads up to q.Limit claimable jobs: JobClaimable, or one
// tenant's JobClaimableTenant.
type claimFunc func(ctx context.Context, q ClaimQuery) ([]lifecycle.Job, error)

// keys counts the jobs of one queue leased or picked per concurrency key
// during one claim, so several reads of candidates (a fair claim's, one per
// tenant) share one count.
type keys struct {
	limit   int
	running map[string]int
}

// newKeys counts the leased jobs of queue by concurrency key.
func newKeys(ctx context.Context, tx Tx, queue string, limit int) (*keys, error) {
	leased, err := tx.JobList(ctx, JobListParams{Queue: queue, Limit: MaxBatch,
		States: []lifecycle.State{lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested}})
	if err != nil {
		return nil, err
	}
	k := &keys{limit: limit, running: map[string]int{}}
	for _, j := range leased {
		k.running[j.Env[ConcurrencyKeyEnv]]++
	}
	return k, nil
}

// claim picks up to q.Limit jobs from claimable in claim order, skipping
// the jobs in skip and those whose concurrency key is at its limit, so a
// busy key never holds back the keys behind it. It reads a window of
// candidates ten times the claim, and widens it (up to MaxBatch) while the
// window is full of jobs it must skip.
func (k *keys) claim(ctx context.Context, q ClaimQuery, claimable claimFunc, skip map[string]bool) ([]lifecycle.Job, error) {
	want := q.Limit
	for window := max(10*want, 100); ; window = min(4*window, MaxBatch) {
		cq := q
		cq.Limit = window
		cands, err := claimable(ctx, cq)
		if err != nil {
			return nil, err
		}
		running := maps.Clone(k.running)
		var out []lifecycle.Job
		for _, j := range cands {
			key := j.Env[ConcurrencyKeyEnv]
			if skip[j.ID] || key != "" && running[key] >= k.limit {
				continue
			}
			running[key]++
			if out = append(out, j); len(out) == want {
				break
			}
		}
		if len(out) == want || len(cands) < window || window == MaxBatch {
			k.running = running
			return out, nil
		}
	}
}

// claimKeyed claims up to q.Limit jobs of q's one queue in claim order,
// at most limit jobs per concurrency key leased at once.
func claimKeyed(ctx context.Context, tx Tx, q ClaimQuery, limit int) ([]lifecycle.Job, error) {
	k, err := newKeys(ctx, tx, q.Queues[0], limit)
	if err != nil {
		return nil, err
	}
	return k.claim(ctx, q, tx.JobClaimable, nil)
}
