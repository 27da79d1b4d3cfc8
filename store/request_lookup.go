package store

import (
	"context"

	"github.com/stint-dev/stint/lifecycle"
)

// RequestLookup is implemented by a driver's Tx that finds the events of
// many (job, request id) pairs in one statement. A batch of owner ops (a
// completion batch) then checks the request ids of all its items with one
// query instead of one query each; without it, each item is looked up on
// its own (Tx.EventByRequest).
type RequestLookup interface {
	// EventsByRequest returns, for each i, the events of job jobIDs[i]
	// with request id requestIDs[i], in any order; pairs with no event
	// have none. The two slices have the same length.
	EventsByRequest(ctx context.Context, jobIDs, requestIDs []string) ([]lifecycle.Event, error)
}

// requestKey is a job and a request id.
type requestKey struct{ job, request string }

// requests is what a batch knows of request ids: the pairs looked up in
// advance, and of those the first event each found.
type requests struct {
	looked map[requestKey]bool
	found  map[requestKey]lifecycle.Event
}

// lookAhead looks up the request ids of n owner ops (op(i) is the i-th) in
// one statement when tx can, so that step finds them without a query each.
func (b *batch) lookAhead(ctx context.Context, tx Tx, n int, op func(i int) OwnerParams) error {
	rl, ok := tx.(RequestLookup)
	if !ok {
		return nil
	}
	var jobs, reqs []string
	for i := range n {
		if p := op(i); p.RequestID != "" {
			jobs, reqs = append(jobs, p.JobID), append(reqs, p.RequestID)
		}
	}
	if len(jobs) < 2 {
		return nil // one query either way
	}
	evs, err := rl.EventsByRequest(ctx, jobs, reqs)
	if err != nil {
		return err
	}
	b.req.looked = make(map[requestKey]bool, len(jobs))
	for i := range jobs {
		b.req.looked[requestKey{jobs[i], reqs[i]}] = true
	}
	b.req.found = make(map[requestKey]lifecycle.Event, len(evs))
	for _, ev := range evs {
		k := requestKey{ev.JobID, ev.RequestID}
		if first, ok := b.req.found[k]; !ok || ev.Rev < first.Rev {
			b.req.found[k] = ev
		}
	}
	return nil
}

// eventByRequest is tx.EventByRequest, answered from what lookAhead found
// when it looked the pair up.
func (b *batch) eventByRequest(ctx context.Context, tx Tx, jobID, requestID string) (lifecycle.Event, bool, error) {
	k := requestKey{jobID, requestID}
	if b.req.looked[k] {
		ev, ok := b.req.found[k]
		return ev, ok, nil
	}
	return tx.EventByRequest(ctx, jobID, requestID)
}
