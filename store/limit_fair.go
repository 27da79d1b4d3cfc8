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
func (e *engine) claimFair(ctx context.Context, tx Tx, qt QueueTx, q ClaimQuery, s QueueSettings) ([]lifecycle.Job, error) {
	tenants, err := qt.QueueTenants(ctx, q.Queues[0], 1000)
	if err != nil || len(tenants) <= 1 {
		if err != nil {
			return nil, err
		}
		return tx.JobClaimable(ctx, q)
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
		got, err := qt.JobClaimableTenant(ctx, tq, t)
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
		more, err := tx.JobClaimable(ctx, q)
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
