package store

import "context"

// ClaimWaiter is implemented by stores whose JobClaim can wait at their
// source for jobs when none is ready: the remote store long-polls its
// server, whose dispatcher parks the claim until a wake-up. A pool over such
// a store lets its claims wait (WithClaimWaiting) instead of waiting for
// Wakeups or polling, so an idle worker costs its server nothing but a
// parked request.
type ClaimWaiter interface {
	// ClaimWaits reports whether JobClaim waits when ctx allows it.
	ClaimWaits() bool
}

type claimWaitKey struct{}

// WithClaimWaiting returns ctx marked to let JobClaim wait for jobs, up to
// the store's own bound, when none is ready; it returns when jobs are
// leased, the bound passes (with none) or ctx ends. Stores that are no
// ClaimWaiter claim at once whatever ctx says.
func WithClaimWaiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, claimWaitKey{}, true)
}

// ClaimWaiting reports whether ctx lets a claim wait (WithClaimWaiting).
func ClaimWaiting(ctx context.Context) bool {
	ok, _ := ctx.Value(claimWaitKey{}).(bool)
	return ok
}
