package server

import (
	"context"
	"sync"
	"time"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// completes merges the completion calls of many workers into few store
// calls. Remote pools each send their own small batches (a pool with four
// slots completes a few jobs at a time); one store call per request would
// cost a transaction and its statements per handful of jobs. Calls that
// arrive while a store call runs wait for it and go together in the next
// one, as the embedded pool's completer batches its own handlers. A lone
// call goes at once: merging adds no wait, only company.
//
// Each job is still fenced on its own lease and gets its own result; a
// call whose job is already in the batch being built (a worker's retry of
// a call still under way) waits for the next batch, so a batch never holds
// a job twice. Should a merged store call fail as a whole, each of its
// calls is tried alone, so that no call gets an error that only another's
// items caused.
type completes struct {
	s interface {
		JobComplete(ctx context.Context, ps []store.JobCompleteParams) ([]store.Result, error)
	}
	mu      sync.Mutex
	pending []*completeCall
	busy    bool // a flush is under way
	// queued, set by tests, hears the number of pending calls each time a
	// call joins them.
	queued chan<- int
}

// completeCall is one request's completions and, once done is closed, its
// outcome.
type completeCall struct {
	ps   []store.JobCompleteParams
	res  []store.Result
	err  error
	done chan struct{}
}

// maxMerged bounds the completions of one merged store call.
const maxMerged = 1000

// flushTimeout bounds a merged store call, which serves several requests
// and so cannot run under any one request's context.
const flushTimeout = time.Minute

// complete completes ps, merged with what other calls send meanwhile. If
// ctx ends first it returns ctx's error; the completions may still be
// written, as when a reply is lost (the worker's retry, with the same
// request ids, is answered from the first).
func (c *completes) complete(ctx context.Context, ps []store.JobCompleteParams) ([]store.Result, error) {
	call := &completeCall{ps: ps, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	lead := !c.busy
	c.busy = true
	if c.queued != nil {
		c.queued <- len(c.pending)
	}
	c.mu.Unlock()
	if lead {
		c.flush()
	}
	select {
	case <-call.done:
		return call.res, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flush runs store calls until nothing is pending. The caller that found
// it idle runs the first; if more arrived meanwhile, a goroutine takes
// over, so that no request waits for others' batches.
func (c *completes) flush() {
	batch := c.take()
	c.run(batch)
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.busy = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.flush()
}

// take removes from pending the calls of the next batch: in order of
// arrival, up to maxMerged completions (at least one call), none with a job
// already taken.
func (c *completes) take() []*completeCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var batch, rest []*completeCall
	seen := map[string]bool{}
	n := 0
	for _, call := range c.pending {
		if len(batch) > 0 && (n+len(call.ps) > maxMerged || holdsAny(seen, call.ps)) {
			rest = append(rest, call)
			continue
		}
		for _, p := range call.ps {
			seen[p.JobID] = true
		}
		n += len(call.ps)
		batch = append(batch, call)
	}
	c.pending = rest
	return batch
}

func holdsAny(seen map[string]bool, ps []store.JobCompleteParams) bool {
	for _, p := range ps {
		if seen[p.JobID] {
			return true
		}
	}
	return false
}

// run makes one store call for batch and hands each call its results.
func (c *completes) run(batch []*completeCall) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	var all []store.JobCompleteParams
	for _, call := range batch {
		all = append(all, call.ps...)
	}
	res, err := c.s.JobComplete(ctx, all)
	if err != nil && len(batch) > 1 {
		for _, call := range batch {
			call.res, call.err = c.s.JobComplete(ctx, call.ps)
			close(call.done)
		}
		return
	}
	for _, call := range batch {
		n := len(call.ps)
		if err != nil {
			call.err = err
		} else {
			call.res, res = res[:n:n], res[n:]
		}
		close(call.done)
	}
}

// completeItems completes the items of a CompleteMany (or the completions
// of a CompleteAndClaim): all are checked first, and a bad one refuses
// them all, changing nothing; then each passes the tenant check on its
// own, and those that pass go in one merged store call. A refused item
// (another tenant's job, a stale lease) gets its own error result. With
// omitJobs an accepted item's result is empty: the stored job is neither
// encoded nor sent.
func (h *worker) completeItems(ctx context.Context, items []*stintv1.CompleteRequest, omitJobs bool) ([]*stintv1.CompleteResult, error) {
	if len(items) > MaxBatch {
		return nil, invalid("a batch takes 1 to %d completions, not %d", MaxBatch, len(items))
	}
	params := make([]store.JobCompleteParams, len(items))
	for i, m := range items {
		cp, err := h.completeParams(m)
		if err != nil {
			return nil, invalid("completion %d: %s", i, messageOf(err))
		}
		params[i] = cp
	}
	out := make([]*stintv1.CompleteResult, len(items))
	var mine []store.JobCompleteParams
	var at []int
	for i, cp := range params {
		if _, err := h.own(ctx, cp.JobID); err != nil {
			out[i] = failedItem(err)
			continue
		}
		mine, at = append(mine, cp), append(at, i)
	}
	if len(mine) == 0 {
		return out, nil
	}
	res, err := h.completes.complete(ctx, mine)
	if err != nil {
		return nil, toConnect(err)
	}
	t := principalOf(ctx).tenant
	for k, r := range res {
		switch {
		case r.Err != nil:
			out[at[k]] = failedItem(toConnect(r.Err))
		case omitJobs:
			out[at[k]] = &stintv1.CompleteResult{}
		default:
			out[at[k]] = &stintv1.CompleteResult{Job: jobToProto(t, r.Job)}
		}
	}
	return out, nil
}
