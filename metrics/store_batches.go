package metrics

import (
	"context"

	"github.com/stint-dev/stint/store"
)

// JobClaimMany counts what a multi-owner claim (a server's dispatcher
// serving several long polls at once) leased, as JobClaim counts a claim.
func (s *instrumented) JobClaimMany(ctx context.Context, ps []store.JobClaimParams) ([]store.ClaimResult, error) {
	res, err := store.ClaimMany(ctx, s.Store, ps)
	if err != nil {
		s.m.refused("claim", err)
		return res, err
	}
	for _, r := range res {
		if r.Err != nil {
			s.m.refused("claim", r.Err)
		}
		for _, j := range r.Jobs {
			s.m.claims.WithLabelValues(s.m.queue(j.Queue), s.m.kind(j.Kind)).Inc()
			if wait := j.UpdatedAt.Sub(j.RunAt); wait >= 0 {
				s.m.queueWait.WithLabelValues(s.m.kind(j.Kind)).Observe(wait.Seconds())
			}
		}
	}
	return res, nil
}

// JobHeartbeatMany counts the leases a batch renewed and its stale items,
// as JobHeartbeat counts one.
func (s *instrumented) JobHeartbeatMany(ctx context.Context, ps []store.JobHeartbeatParams) ([]store.Result, error) {
	res, err := store.HeartbeatMany(ctx, s.Store, ps)
	if err != nil {
		s.m.refused("heartbeat", err)
		return res, err
	}
	for _, r := range res {
		if r.Err != nil {
			s.m.refused("heartbeat", r.Err)
			continue
		}
		s.m.leaseRenewals.WithLabelValues(s.m.kind(r.Job.Kind)).Inc()
	}
	return res, nil
}
