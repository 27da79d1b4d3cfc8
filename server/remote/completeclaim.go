package remote

import (
	"context"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

var _ store.CompleteClaimStore = (*Store)(nil)

// JobCompleteClaim completes cs and claims for claim in one request
// (CompleteAndClaim): a pool working a backlog sends its finished jobs
// with the claim for the slots they freed. A server older than
// CompleteAndClaim answers unimplemented; from then on this store sends a
// CompleteMany and a Claim instead.
func (s *Store) JobCompleteClaim(ctx context.Context, cs []store.JobCompleteParams, claim *store.JobClaimParams) ([]store.Result, []store.Job, error) {
	if err := noNow(claim.Now); err != nil {
		return nil, nil, err
	}
	if !s.apart.Load() {
		items, err := completions(cs)
		if err != nil {
			return nil, nil, err
		}
		req := &stintv1.CompleteAndClaimRequest{Completions: items, Claim: s.claimRequest(ctx, claim)}
		res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.CompleteAndClaim, req)
		if err == nil {
			return results(res.Results), jobsOf(res.Jobs), nil
		}
		if connect.CodeOf(err) != connect.CodeUnimplemented {
			return nil, nil, fromWire(err)
		}
		s.apart.Store(true)
	}
	var out []store.Result
	if len(cs) > 0 {
		var err error
		if out, err = s.JobComplete(ctx, cs); err != nil {
			return nil, nil, err
		}
	}
	jobs, err := s.JobClaim(ctx, claim)
	if err != nil {
		return nil, nil, err
	}
	return out, jobs, nil
}
