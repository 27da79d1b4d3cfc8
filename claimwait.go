package stint

import (
	"context"

	"github.com/stint-dev/stint/store"
)

// claimWaits reports whether the pool's store waits for jobs in JobClaim
// (store.ClaimWaiter: the remote store long-polls its server).
func (p *Pool) claimWaits() bool {
	w, ok := p.store.(store.ClaimWaiter)
	return ok && w.ClaimWaits()
}

// claimContext is the context of one claim of the fetcher: the pool's base
// context, which Stop never cancels, so that a claimed job always gets its
// attempt. On a store that waits for jobs, the last claim of a round (the
// one nothing else waits behind) may wait: it gets the fetcher's context,
// which Stop ends; the server gives back what it leased for a wait that
// ended that way.
func (f *fetcher) claimContext(ctx context.Context, last bool) (context.Context, bool) {
	if !last || !f.p.claimWaits() {
		return f.p.base, false
	}
	return store.WithClaimWaiting(ctx), true
}
