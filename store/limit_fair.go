package store

import (
	"context"
	"slices"

	"github.com/stint-dev/stint/lifecycle"
)

// claimFair claims up to q.Limit jobs of q's one queue shared between the
// tenants with queued jobs by their weights, then fills what they leave
// (work-conserving: a lone tenant gets every slot). The tenant served
// first, who gets the remainder of the division, rotates between claims.
// A queue with a KeyLimit too has it applied to every tenant's share and
// to the fill, with one count per key across them.
func (e *engine) claimFair(ctx context.Context, tx Tx, qt QueueTx, q ClaimQuery, s QueueSettings) ([]lifecycle.Job, error) {
	// pick reads up to q.Limit jobs from claimable, not those in skip.
	pick := func(ctx context.Context, q ClaimQuery, claimable claimFunc, skip map[string]bool) ([]lifecycle.Job, error) {
		return claimable(ctx, q)
	}
	if s.KeyLimit > 0 {
		k, err := newKeys(ctx, tx, q.Queues[0], s.KeyLimit)
		if err != nil {
			return nil, err
		}
		pick = k.claim
	}
	tenants, err := qt.QueueTenants(ctx, q.Queues[0], 1000)
	if err != nil || len(tenants) <= 1 {
		if err != nil {
			return nil, err
		}
		return pick(ctx, q, tx.JobClaimable, nil)
	}
	slices.Sort(tenants)
	e.limits.mu.Lock()
	first := e.limits.turn % len(tenants)
	e.limits.turn++
	e.limits.mu.Unlock()
	tenants = append(tenants[first:], tenants[:first]...)
	weight := func(t string) int {
		if w, ok := s.Weights[t]; ok {
			return w
		}
		return 1
	}
	total := 0
	for _, t := range tenants {
		total += weight(t)
	}
	shares := make([]int, len(tenants))
	left := q.Limit
	for i, t := range tenants {
		shares[i] = q.Limit * weight(t) / total
		left -= shares[i]
	}
	for i := 0; left > 0; i = (i + 1) % len(tenants) {
		shares[i]++
		left--
	}
	var out []lifecycle.Job
	seen := map[string]bool{}
	for i, t := range tenants {
		if shares[i] == 0 {
			continue
		}
		tq := q
		tq.Limit = shares[i]
		got, err := pick(ctx, tq, func(ctx context.Context, q ClaimQuery) ([]lifecycle.Job, error) {
			return qt.JobClaimableTenant(ctx, q, t)
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, j := range got {
			seen[j.ID] = true
		}
		out = append(out, got...)
	}
	if len(out) < q.Limit {
		// Some tenants had fewer jobs than their share: the rest go in
		// claim order to whoever has them.
		more, err := pick(ctx, q, tx.JobClaimable, seen)
		if err != nil {
			return nil, err
		}
		for _, j := range more {
			if len(out) < q.Limit && !seen[j.ID] {
				out = append(out, j)
			}
		}
	}
	return out, nil
}
