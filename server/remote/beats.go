package remote

import (
	"context"
	"sync"
	"time"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// beats sends heartbeats in batches, as a group commit: a heartbeat that
// finds no call under way goes at once; those that come while one is under
// way go together in the next HeartbeatMany call. A pool renews its due
// leases at the same moment, so its beat costs about two calls, whatever
// the number of jobs, with no timer and no delay for a lone heartbeat.
type beats struct {
	mu      sync.Mutex
	pending []*beat
	sending bool
	single  bool // the server has no HeartbeatMany: send one by one
}

// beat is one heartbeat waiting for its answer.
type beat struct {
	ctx  context.Context
	req  *stintv1.HeartbeatRequest
	job  store.Job
	err  error
	done chan struct{}
}

// send renews one lease, in the next batch.
func (b *beats) send(ctx context.Context, s *Store, req *stintv1.HeartbeatRequest) (store.Job, error) {
	bt := &beat{ctx: ctx, req: req, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, bt)
	lead := !b.sending
	b.sending = true
	b.mu.Unlock()
	if lead {
		b.flush(s)
	}
	select {
	case <-bt.done:
		return bt.job, bt.err
	case <-ctx.Done():
		return store.Job{}, ctx.Err()
	}
}

// flush sends the pending batches until none is left.
func (b *beats) flush(s *Store) {
	for {
		b.mu.Lock()
		n := min(len(b.pending), server.MaxBatch)
		batch := b.pending[:n:n]
		b.pending = b.pending[n:]
		if n == 0 {
			b.sending = false
			b.pending = nil
		}
		single := b.single
		b.mu.Unlock()
		if n == 0 {
			return
		}
		if single || n == 1 {
			b.sendEach(s, batch)
		} else {
			b.sendMany(s, batch)
		}
	}
}

// batchContext bounds a batch's call by its items' earliest deadline, and
// not by their cancellation: one caller giving up fails no other.
func batchContext(batch []*beat) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var at time.Time
	for _, bt := range batch {
		if d, ok := bt.ctx.Deadline(); ok && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	if at.IsZero() {
		return context.WithTimeout(ctx, time.Minute)
	}
	return context.WithDeadline(ctx, at)
}

func (b *beats) sendMany(s *Store, batch []*beat) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	req := &stintv1.HeartbeatManyRequest{Heartbeats: make([]*stintv1.HeartbeatRequest, len(batch))}
	for i, bt := range batch {
		req.Heartbeats[i] = bt.req
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.HeartbeatMany, req)
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		b.mu.Lock()
		b.single = true // a server from before HeartbeatMany
		b.mu.Unlock()
		b.sendEach(s, batch)
		return
	}
	for i, bt := range batch {
		switch {
		case err != nil:
			bt.err = fromWire(err)
		case i >= len(res.Results):
			bt.err = &Error{Code: connect.CodeInternal, Msg: "remote: the server answered fewer heartbeats than were sent"}
		case res.Results[i].ErrorCode != "":
			bt.err = itemError(res.Results[i])
		default:
			bt.job = job(res.Results[i].Heartbeat.GetJob())
		}
		close(bt.done)
	}
}

func (b *beats) sendEach(s *Store, batch []*beat) {
	for _, bt := range batch {
		ctx, cancel := batchContext([]*beat{bt})
		res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Heartbeat, bt.req)
		cancel()
		bt.job, bt.err = jobOf(res, err)
		close(bt.done)
	}
}
