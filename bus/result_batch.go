package bus

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// resultReaders bounds the job reads of one batch of results.
const resultReaders = 8

// doneResult is a SUCCEEDED result whose job is running under its token:
// completed with the others of its batch in one transaction.
type doneResult struct {
	msg jetstream.Msg
	r   JobResult
	j   lifecycle.Job
}

// applyResults applies a fetched batch of results. The SUCCEEDED results
// of running jobs, whose token is the job's lease, complete in one
// transaction (each fenced on its own lease, acked after the commit);
// every other result, and any result about a job an earlier message of
// the batch concerns, goes one by one in order (applyResult), so each job's
// results keep their order. A job this bridge dispatched is judged on the
// record its dispatch (or last heartbeat) left, and completed from it
// without reading its row (the store writes it only where the row is still
// at that revision); any other job is read first.
func (b *Bridge) applyResults(ctx context.Context, msgs []jetstream.Msg) {
	type decoded struct {
		r  JobResult
		ok bool
		j  lifecycle.Job
	}
	ds := make([]decoded, len(msgs))
	touched := map[string]bool{}
	var reads []int
	for i, msg := range msgs {
		var r JobResult
		ok := json.Unmarshal(msg.Data(), &r) == nil && r.check() == "" && r.Status == StatusSucceeded && !touched[r.StintJobID]
		touched[orText(r.StintJobID, resultKey(msg))] = true
		ds[i] = decoded{r: r, ok: ok}
		if !ok {
			continue
		}
		if j, held := b.out.held(r.StintJobID); held && completes(j, r) {
			ds[i].j = j
			continue
		}
		reads = append(reads, i)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(resultReaders, len(reads)) {
		wg.Go(func() {
			for i := range next {
				j, err := b.st.JobGet(ctx, ds[i].r.StintJobID)
				ds[i].j = j
				ds[i].ok = err == nil && completes(j, ds[i].r)
			}
		})
	}
	for _, i := range reads {
		next <- i
	}
	close(next)
	wg.Wait()
	var done []doneResult
	var rest []jetstream.Msg
	for i, msg := range msgs {
		if ds[i].ok {
			done = append(done, doneResult{msg, ds[i].r, ds[i].j})
		} else {
			rest = append(rest, msg)
		}
	}
	b.completeMany(ctx, done)
	b.lanes(ctx, rest, resultKey, b.applyResult)
}

// completes reports whether a SUCCEEDED result r completes j: j runs under
// r's token.
func completes(j lifecycle.Job, r JobResult) bool {
	return j.ID == r.StintJobID && j.State == lifecycle.Running && (r.JobID == "" || r.JobID == j.CorrelationID) &&
		(r.Attempt == 0 || r.Attempt == j.Attempt) && r.LeaseID == j.LeaseID
}

// completeMany completes the jobs of done in one transaction.
func (b *Bridge) completeMany(ctx context.Context, done []doneResult) {
	if len(done) == 0 {
		return
	}
	ps := make([]store.JobCompleteParams, len(done))
	for i, d := range done {
		ps[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: d.j.ID, LeaseID: d.r.LeaseID},
			Result: d.r.Result, ResultPtr: d.r.ResultPtr, ExecutionMS: d.r.ExecutionMS, Held: &done[i].j}
	}
	res, err := b.st.JobComplete(ctx, ps)
	if err != nil { // the call as a whole: each on its own says which
		for _, d := range done {
			b.applyResult(ctx, d.msg)
		}
		return
	}
	for i, d := range done {
		if res[i].Err != nil { // refused by its row: judged and answered one by one
			b.applyResult(ctx, d.msg)
			continue
		}
		b.m.applied.WithLabelValues(string(d.r.Status)).Inc()
		b.settled(res[i].Job, d.r)
		_ = d.msg.Ack()
	}
}
