package store

import (
	"context"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
)

// HeartbeatManyStore is implemented by stores that renew many leases in one
// call: a server turns a pool's batch of heartbeats (HeartbeatMany) into one
// store call, one transaction. Find it with As.
type HeartbeatManyStore interface {
	// JobHeartbeatMany renews each lease of ps in one transaction. Each
	// item is judged exactly as JobHeartbeat judges it alone (fenced on its
	// own lease, idempotent on its request id, at the transaction's time)
	// and answered on its own: an item the store refuses (stale lease, not
	// found, a terminal job) gets its error in its Result and changes
	// nothing, while the others are renewed. A database failure fails the
	// whole call and renews nothing. Now is ps[0].Now.
	JobHeartbeatMany(ctx context.Context, ps []JobHeartbeatParams) ([]Result, error)
}

func (e *engine) JobHeartbeatMany(ctx context.Context, ps []JobHeartbeatParams) ([]Result, error) {
	if len(ps) > MaxBatch {
		return nil, lifecycle.Validationf("a heartbeat batch takes at most %d items, not %d: split it", MaxBatch, len(ps))
	}
	if len(ps) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(ps))
	for i, p := range ps {
		if err := checkID(p.JobID); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		ids = append(ids, p.JobID)
	}
	var out []Result
	err := e.write(ctx, func(tx Tx, b *batch) error {
		out = make([]Result, len(ps))
		// Lock every row, then read the time (as one does for one job).
		jobs, err := tx.JobGet(ctx, ids)
		if err != nil {
			return err
		}
		t, err := now(ctx, tx, ps[0].Now)
		if err != nil {
			return err
		}
		if err := b.lookAhead(ctx, tx, len(ps), func(i int) OwnerParams { return ps[i].OwnerParams }); err != nil {
			return err
		}
		byID := make(map[string]lifecycle.Job, len(jobs))
		for _, j := range jobs {
			byID[j.ID] = j
		}
		// An item repeated in the batch (same job, same request id) is one
		// request: it gets the first one's answer.
		first := map[requestKey]int{}
		for i, p := range ps {
			k := requestKey{p.JobID, p.RequestID}
			if f, ok := first[k]; ok && p.RequestID != "" {
				out[i] = out[f]
				continue
			}
			first[k] = i
			j, ok := byID[p.JobID]
			if !ok {
				out[i].Err = notFound(p.JobID)
				continue
			}
			c := owner(p.OwnerParams, lifecycle.OpHeartbeat)
			c.LeaseTTL, c.Progress, c.Phase = p.LeaseTTL, p.Progress, p.Phase
			next, err := e.step(ctx, tx, b, j, c, nil, t)
			if err != nil {
				if !IsRejection(err) {
					return err
				}
				out[i].Err = err
				continue
			}
			out[i].Job = next
			byID[p.JobID] = next
		}
		return nil
	})
	return out, err
}

// HeartbeatEach renews each lease of ps with its own s.JobHeartbeat,
// answered as JobHeartbeatMany answers: the form of JobHeartbeatMany for a
// store that has none. A database failure ends the call.
func HeartbeatEach(ctx context.Context, s Store, ps []JobHeartbeatParams) ([]Result, error) {
	out := make([]Result, len(ps))
	for i := range ps {
		j, err := s.JobHeartbeat(ctx, &ps[i])
		if err != nil && !IsRejection(err) {
			return nil, err
		}
		out[i] = Result{Job: j, Err: err}
	}
	return out, nil
}

// HeartbeatMany is s's JobHeartbeatMany where s (or a store it wraps) has
// one, and HeartbeatEach otherwise.
func HeartbeatMany(ctx context.Context, s Store, ps []JobHeartbeatParams) ([]Result, error) {
	if hm, ok := As[HeartbeatManyStore](s); ok {
		return hm.JobHeartbeatMany(ctx, ps)
	}
	return HeartbeatEach(ctx, s, ps)
}
