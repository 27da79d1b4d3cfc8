package server

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// maxLeaseTTL bounds the lease a worker may ask for.
const maxLeaseTTL = 24 * time.Hour

// leaseTTL resolves a requested lease: the default when unset, refused when
// negative or longer than a day.
func (s *service) leaseTTL(field string, d interface{ AsDuration() time.Duration }) (time.Duration, error) {
	ttl := d.AsDuration()
	switch {
	case ttl == 0:
		return s.cfg.DefaultLeaseTTL, nil
	case ttl < 0 || ttl > maxLeaseTTL:
		return 0, invalid("%s %s: expected a positive duration up to %s", field, ttl, maxLeaseTTL)
	}
	return ttl, nil
}

// Claim leases up to limit jobs. When none is ready and the request asks to
// wait, the server's dispatcher parks it until a wake-up of its queues (this
// process's own commits and, on PostgreSQL, every server's NOTIFY) lets it
// lease jobs for it, or the wait ends. It never polls the database, and a
// wake-up is one claim for the waiters it can feed (one store call leasing
// to each its own jobs), not a claim per waiter.
func (h *worker) Claim(ctx context.Context, req *connect.Request[stintv1.ClaimRequest]) (*connect.Response[stintv1.ClaimResponse], error) {
	p, m := principalOf(ctx), req.Msg
	params, wait, err := h.claimParams(p, m)
	if err != nil {
		return nil, err
	}
	jobs, err := h.claim(p, params, func() ([]store.Job, error) { return h.claims.Claim(ctx, params, wait) })
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stintv1.ClaimResponse{Jobs: jobs}), nil
}

// CompleteAndClaim completes a worker's finished jobs and claims more in
// one request, so that a pool working a backlog makes one request per
// round instead of a CompleteMany and a Claim. Everything is checked
// first (bad input refuses the call and changes nothing); the completions
// go through the same merged store call as CompleteMany's, each fenced and
// answered on its own, so a stale lease refuses its item and not the
// claim; then the claim runs as Claim's, parked in the dispatcher when it
// waits. A failure of either fails the call: the worker's retry, with the
// same request ids, gets the first call's answers for what was written.
func (h *worker) CompleteAndClaim(ctx context.Context, req *connect.Request[stintv1.CompleteAndClaimRequest]) (*connect.Response[stintv1.CompleteAndClaimResponse], error) {
	p, m := principalOf(ctx), req.Msg
	if m.Claim == nil {
		return nil, invalid("claim is required: the claim to make after the completions (send CompleteMany to complete without claiming)")
	}
	params, wait, err := h.claimParams(p, m.Claim)
	if err != nil {
		return nil, err
	}
	out := &stintv1.CompleteAndClaimResponse{}
	if len(m.Completions) > 0 {
		if out.Results, err = h.completeItems(ctx, m.Completions, false); err != nil {
			return nil, err
		}
	}
	// Without a wait the claim joins the line of its queues when claims of
	// the line run already (dispatch.Dispatcher.ClaimNow): workers that
	// complete and claim under load share claims, as their long polls do.
	claim := func() ([]store.Job, error) { return h.claims.ClaimNow(ctx, params) }
	if wait > 0 {
		claim = func() ([]store.Job, error) { return h.claims.Claim(ctx, params, wait) }
	}
	if out.Jobs, err = h.claim(p, params, claim); err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// claim runs a checked claim of params through the dispatcher and returns
// its jobs as the caller sees them, noting the owner of each.
func (h *worker) claim(p principal, params *store.JobClaimParams, run func() ([]store.Job, error)) ([]*stintv1.Job, error) {
	jobs, err := run()
	if err != nil {
		return nil, toConnect(err)
	}
	out := make([]*stintv1.Job, len(jobs))
	for i, j := range jobs {
		if p.tenant.owns(j) {
			h.owners.note(j.ID, p.tenant.name, params.WorkerID)
		}
		out[i] = jobToProto(p.tenant, j)
	}
	return out, nil
}

func (h *worker) claimParams(p principal, m *stintv1.ClaimRequest) (*store.JobClaimParams, time.Duration, error) {
	switch {
	case len(m.Queues) == 0 && len(m.Topics) == 0:
		return nil, 0, invalid("name the queues (1 to 100) or topic patterns to claim from")
	case len(m.Queues) > 100:
		return nil, 0, invalid("name at most 100 queues to claim from, not %d", len(m.Queues))
	case len(m.Topics) > 100:
		return nil, 0, invalid("name at most 100 topic patterns, not %d", len(m.Topics))
	}
	if len(m.Kinds) > 100 {
		return nil, 0, invalid("name at most 100 kinds, not %d", len(m.Kinds))
	}
	limit := int(m.Limit)
	switch {
	case limit == 0:
		limit = 1
	case limit < 0 || limit > MaxBatch:
		return nil, 0, invalid("limit %d: expected 1 to %d", limit, MaxBatch)
	}
	ttl, err := h.leaseTTL("lease_ttl", m.LeaseTtl)
	if err != nil {
		return nil, 0, err
	}
	if err := checkDuration("wait", m.Wait); err != nil {
		return nil, 0, err
	}
	wait := m.Wait.AsDuration()
	if wait > h.cfg.MaxClaimWait {
		return nil, 0, invalid("wait %s: the limit is %s; claim again after an empty reply", wait, h.cfg.MaxClaimWait)
	}
	for _, f := range []struct{ name, v string }{{"worker_id", m.WorkerId}, {"request_id", m.RequestId}} {
		if err := checkText(f.name, f.v, MaxNameBytes); err != nil {
			return nil, 0, err
		}
	}
	owner := p.name
	if m.WorkerId != "" {
		owner += "/" + m.WorkerId
	}
	params := &store.JobClaimParams{WorkerID: owner, Limit: limit, LeaseTTL: ttl, Start: m.Start, RequestID: p.tenant.scopeRequest(m.RequestId)}
	for _, q := range m.Queues {
		if err := checkName("queue", q); err != nil {
			return nil, 0, err
		}
		if err := queueName("queue", q); err != nil {
			return nil, 0, err
		}
		params.Queues = append(params.Queues, p.tenant.storeQueue(q))
	}
	for _, k := range m.Kinds {
		if err := checkName("kind", k); err != nil {
			return nil, 0, err
		}
		params.Kinds = append(params.Kinds, k)
	}
	// Topics filter within the queues. A claim by topics alone claims from
	// the tenant's default queue, where jobs enqueued without a queue go.
	for _, t := range m.Topics {
		if err := lifecycle.CheckTopicPattern(t); err != nil {
			return nil, 0, toConnect(err)
		}
		params.Topics = append(params.Topics, t)
	}
	if len(params.Queues) == 0 {
		params.Queues = []string{p.tenant.storeQueue(lifecycle.DefaultQueue)}
	}
	return params, wait, nil
}
