package store

import "context"

// CompleteClaimStore is implemented by stores that complete jobs and claim
// more in one call: the remote store, over a server's CompleteAndClaim, so
// that a pool working a backlog makes one request per round instead of a
// completion request and a claim request. A pool uses it when its store
// has it (find it with As); stores on a database have no round trip to
// save and do not offer it.
type CompleteClaimStore interface {
	// JobCompleteClaim completes cs as JobComplete does (one result per
	// item, in order: a refused item, such as a stale lease, refuses that
	// item alone), then claims as JobClaim does for claim, which is made
	// even when items were refused. A ctx of WithClaimWaiting lets the
	// claim wait for jobs as JobClaim's does. An error means neither part
	// is known to be done: a retry with the same request ids (each item's
	// and the claim's) answers as the first call would have.
	JobCompleteClaim(ctx context.Context, cs []JobCompleteParams, claim *JobClaimParams) ([]Result, []Job, error)
}
