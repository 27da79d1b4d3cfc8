package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// ClaimManyStore is implemented by stores that lease jobs to several
// claimers in one call: a server's dispatcher serves the long polls waiting
// on a queue with one claim query per wake-up, not one per waiter. Find it
// with As.
type ClaimManyStore interface {
	// JobClaimMany claims, in one transaction, for each of ps as JobClaim
	// would for it alone: each job is leased to one claim's WorkerID, with
	// that claim's lease TTL, Start and request id, and gets its own
	// claimed event. The claims must name the same queues, kinds and
	// topics (as sets). The jobs are dealt one at a time in claim order
	// to the claims in the order given, skipping claims that reached
	// their Limit, so n jobs among k claims give each ⌊n/k⌋ or ⌈n/k⌉ (the
	// first claims the extra ones) unless its Limit is lower. A claim whose
	// request id was used before gets what that claim leased (as JobClaim
	// does) and no new job; one that the store refuses (its request id
	// was another worker's) gets its error and nothing else is refused.
	// The answer has one ClaimResult per claim, in the order of ps. Now is
	// ps[0].Now.
	JobClaimMany(ctx context.Context, ps []JobClaimParams) ([]ClaimResult, error)
}

// ClaimResult is what one claim of a JobClaimMany got: its jobs in claim
// order, or the error that refused it.
type ClaimResult struct {
	Jobs []Job
	Err  error
}

// MaxClaimsPerCall bounds the claims of one JobClaimMany.
const MaxClaimsPerCall = 1000

// ClaimRequestLookup is implemented by a driver's Tx that finds, in one
// statement, the jobs whose claimed event carries any of many request ids:
// a JobClaimMany then checks every claim's request id with one query
// instead of one query each (Tx.EventJobsByRequest).
type ClaimRequestLookup interface {
	// JobsByClaimRequest returns, for each request id of requestIDs that a
	// claimed event carries, the ids of its jobs.
	JobsByClaimRequest(ctx context.Context, requestIDs []string) (map[string][]string, error)
}

func (e *engine) JobClaimMany(ctx context.Context, ps []JobClaimParams) ([]ClaimResult, error) {
	if err := checkClaimMany(ps); err != nil {
		return nil, err
	}
	var queues []string
	for _, p := range ps {
		queues = append(queues, p.Queues...)
	}
	release, err := e.turns.take(ctx, e.limits.known(queues))
	if err != nil {
		return nil, err
	}
	defer release()
	var out []ClaimResult
	err = e.write(ctx, func(tx Tx, b *batch) error {
		out = make([]ClaimResult, len(ps))
		var at time.Time
		if ps[0].Now != nil {
			at = *ps[0].Now
		}
		q := ClaimQuery{Queues: ps[0].Queues, Kinds: ps[0].Kinds, Topics: ps[0].Topics, WorkerID: ps[0].WorkerID, Now: at}
		var again map[string]bool
		var jobs []lifecycle.Job
		var err error
		if later, ok := tx.(ClaimRequestLookupLater); ok {
			// The request ids ride with the claim in one round trip; the
			// claim locks rows for every claim, and those of retried
			// claims stay queued (locked until commit).
			found := map[string][]string{}
			later.JobsByClaimRequestLater(claimRequestIDs(ps), found)
			for _, p := range ps {
				q.Limit += p.Limit
			}
			if jobs, err = e.claimable(ctx, tx, q); err != nil {
				return err
			}
			if _, err := tx.Now(ctx); err != nil { // sends the lookup if nothing went yet
				return err
			}
			again = usedOf(found)
		} else {
			if again, err = usedClaimRequests(ctx, tx, ps); err != nil {
				return err
			}
			for _, p := range ps {
				if !again[p.RequestID] {
					q.Limit += p.Limit
				}
			}
			if q.Limit > 0 {
				if jobs, err = e.claimable(ctx, tx, q); err != nil {
					return err
				}
			}
		}
		var fresh []int // the claims that lease new jobs
		for i := range ps {
			if !again[ps[i].RequestID] {
				fresh = append(fresh, i)
			}
		}
		t, err := now(ctx, tx, ps[0].Now)
		if err != nil {
			return err
		}
		for i := range ps {
			p := &ps[i]
			if !again[p.RequestID] {
				continue
			}
			out[i].Jobs, _, err = e.claimAgain(ctx, tx, b, p, t)
			if err != nil && !IsRejection(err) {
				return err
			}
			out[i].Err = err
		}
		for _, i := range fresh {
			if err := e.claimed(ctx, tx, &ps[i], t); err != nil {
				return err
			}
		}
		return e.deal(b, ps, fresh, jobs, t, out)
	})
	return out, err
}

// deal leases jobs, in claim order, one at a time to the fresh claims in
// turn, skipping those that reached their limit. A job that lifecycle will
// not claim after all (no attempts left) is left where it is.
func (e *engine) deal(b *batch, ps []JobClaimParams, fresh []int, jobs []lifecycle.Job, t time.Time, out []ClaimResult) error {
	turn := 0
	for _, j := range jobs {
		i := -1
		for range fresh {
			k := fresh[turn%len(fresh)]
			turn++
			if len(out[k].Jobs) < ps[k].Limit {
				i = k
				break
			}
		}
		if i < 0 {
			return nil // every claim is full
		}
		p := &ps[i]
		c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: p.WorkerID, LeaseID: e.newID(), LeaseTTL: p.LeaseTTL, RequestID: p.RequestID}
		at := notBefore(t, j)
		s, err := lifecycle.Apply(j, c, at)
		if err != nil {
			turn-- // the same claim's turn again
			continue
		}
		job, err := addClaimed(b, j, s, c, at, p.Start)
		if err != nil {
			return err
		}
		out[i].Jobs = append(out[i].Jobs, job)
	}
	return nil
}

// ClaimRequestLookupLater is implemented by a driver's Tx that can send a
// JobClaimMany's request-id lookup with its next statement (the claim's
// locking read) instead of in a round trip of its own.
type ClaimRequestLookupLater interface {
	// JobsByClaimRequestLater queues the lookup of JobsByClaimRequest; found
	// is filled when the transaction's next statement returns.
	JobsByClaimRequestLater(requestIDs []string, found map[string][]string)
}

// claimRequestIDs returns the request ids of ps that are set.
func claimRequestIDs(ps []JobClaimParams) []string {
	var ids []string
	for _, p := range ps {
		if p.RequestID != "" {
			ids = append(ids, p.RequestID)
		}
	}
	return ids
}

// usedOf turns what a lookup found into the request ids already used.
func usedOf(found map[string][]string) map[string]bool {
	used := make(map[string]bool, len(found))
	for id, jobs := range found {
		used[id] = len(jobs) > 0
	}
	return used
}

// usedClaimRequests returns the request ids of ps that a claimed event
// already carries: those claims are retries.
func usedClaimRequests(ctx context.Context, tx Tx, ps []JobClaimParams) (map[string]bool, error) {
	ids := claimRequestIDs(ps)
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	if rl, ok := tx.(ClaimRequestLookup); ok && len(ids) > 1 {
		found, err := rl.JobsByClaimRequest(ctx, ids)
		return usedOf(found), err
	}
	used := map[string]bool{}
	for _, id := range ids {
		jobs, err := tx.EventJobsByRequest(ctx, id, lifecycle.EventClaimed)
		if err != nil {
			return nil, err
		}
		used[id] = len(jobs) > 0
	}
	return used, nil
}

// checkClaimMany refuses a JobClaimMany whose claims are not each a valid
// claim of the same jobs, or that asks for too much at once.
func checkClaimMany(ps []JobClaimParams) error {
	switch {
	case len(ps) == 0:
		return lifecycle.Validationf("JobClaimMany needs at least one claim")
	case len(ps) > MaxClaimsPerCall:
		return lifecycle.Validationf("JobClaimMany takes at most %d claims, not %d: split them", MaxClaimsPerCall, len(ps))
	}
	total := 0
	requests := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		if err := checkClaim(p); err != nil {
			return fmt.Errorf("claim %d: %w", i, err)
		}
		total += p.Limit
		if !sameSet(p.Queues, ps[0].Queues) || !sameSet(p.Kinds, ps[0].Kinds) || !sameSet(p.Topics, ps[0].Topics) {
			return lifecycle.Validationf("claim %d names other queues, kinds or topics than claim 0: one JobClaimMany serves claims of the same jobs; make one call per set", i)
		}
		if p.RequestID != "" {
			if requests[p.RequestID] {
				return lifecycle.Validationf("claim %d repeats request id %q: each claim needs its own", i, p.RequestID)
			}
			requests[p.RequestID] = true
		}
	}
	if total > MaxBatch {
		return lifecycle.Validationf("the claims' limits add up to %d: at most %d jobs per call", total, MaxBatch)
	}
	return nil
}

// sameSet reports whether a and b hold the same strings, in any order and
// counting repeats once.
func sameSet(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

// ClaimEach claims for each of ps in turn with s.JobClaim, answered as
// JobClaimMany answers: the form of JobClaimMany for a wrapper whose store
// underneath has none. A claim the store refuses gets its error; a
// database failure ends the call.
func ClaimEach(ctx context.Context, s Store, ps []JobClaimParams) ([]ClaimResult, error) {
	out := make([]ClaimResult, len(ps))
	for i := range ps {
		jobs, err := s.JobClaim(ctx, &ps[i])
		if err != nil && !IsRejection(err) {
			return nil, err
		}
		out[i] = ClaimResult{Jobs: jobs, Err: err}
	}
	return out, nil
}

// ClaimMany is s's JobClaimMany where s (or a store it wraps) has one, and
// ClaimEach otherwise: what a wrapper or a server calls to claim for
// several claimers at once.
func ClaimMany(ctx context.Context, s Store, ps []JobClaimParams) ([]ClaimResult, error) {
	if cm, ok := As[ClaimManyStore](s); ok {
		return cm.JobClaimMany(ctx, ps)
	}
	return ClaimEach(ctx, s, ps)
}
