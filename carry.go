package stint

import (
	"context"

	"github.com/google/uuid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Carrying completions with claims. On a store that completes and claims
// in one call (store.CompleteClaimStore: the remote store, whose every
// call is a request to a server), a completion that finishes while its
// queue's fetcher is about to claim, or is between claims that do not
// wait, is handed to the fetcher instead of the completer: it rides with
// the claim for the slot it freed, so a pool working a backlog makes one
// request per round rather than a completion request and a claim
// request. While the fetcher's claim long-polls (it would hold a
// completion for as long as no job comes) completions go to the completer
// as on any store, and a claim that carries completions never waits.

// enableCarry makes f carry completions when the pool's store can send
// them with its long-polling claims. It runs before f's loop starts.
func (f *fetcher) enableCarry() {
	if !f.p.cfg.CarryCompletions {
		return
	}
	cc, ok := store.As[store.CompleteClaimStore](f.p.store)
	if !ok || !f.p.claimWaits() {
		return
	}
	f.cc = cc
	f.p.comp.carriers.Store(f.queue, f)
}

// carrier is the fetcher that would carry a's completion, or nil.
func (c *completer) carrier(a *attempt) *fetcher {
	f, ok := c.carriers.Load(a.job.rec.Queue)
	if !ok {
		return nil
	}
	return f.(*fetcher)
}

// offer hands cp to f for its next claim and reports whether f took it:
// only while f will claim again without waiting long.
func (f *fetcher) offer(cp completion) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.soon {
		return false
	}
	f.carry = append(f.carry, cp)
	return true
}

// ready says that f claims again without waiting long (it waits for a
// slot that a finishing handler frees, or claims at once).
func (f *fetcher) ready() {
	if f.cc == nil {
		return
	}
	f.mu.Lock()
	f.soon = true
	f.mu.Unlock()
}

// unready says that f may not claim for a while (it idles or stops), and
// gives what it carries to the completer.
func (f *fetcher) unready() {
	if f.cc == nil {
		return
	}
	f.mu.Lock()
	f.soon = false
	carried := f.carry
	f.carry = nil
	f.mu.Unlock()
	f.p.comp.resend(carried)
}

// takeCarry takes the completions f carries for the claim it makes now.
// With none and a claim that waits, f stops taking completions until the
// wait is over. Each gets a request id, so that a retry of the call
// (or the completer's, should the call fail) is answered as the first.
func (f *fetcher) takeCarry(waits bool) []completion {
	if f.cc == nil {
		return nil
	}
	f.mu.Lock()
	carried := f.carry
	f.carry = nil
	if len(carried) == 0 && waits {
		f.soon = false
	}
	f.mu.Unlock()
	for i := range carried {
		if carried[i].params.RequestID == "" {
			carried[i].params.RequestID = uuid.NewString()
		}
	}
	return carried
}

// send makes one claim, with the carried completions when there are any
// (reported on success; the caller gives them back on failure).
func (f *fetcher) send(ctx context.Context, carried []completion, params *store.JobClaimParams) ([]lifecycle.Job, error) {
	if len(carried) == 0 {
		return f.p.store.JobClaim(ctx, params)
	}
	ps := make([]store.JobCompleteParams, len(carried))
	for i, cp := range carried {
		ps[i] = cp.params
	}
	results, jobs, err := f.cc.JobCompleteClaim(ctx, ps, params)
	if err != nil {
		return nil, err
	}
	f.p.comp.report(carried, results, nil)
	return jobs, nil
}
