package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// dispatch claims the jobs of WorkerTopics and publishes each on
// DispatchPrefix + topic with its fencing token, until ctx ends. A job is
// claimed and started in one transaction, as the in-process pool does: its
// events still say DISPATCHED then RUNNING, its lease and its per-attempt
// timeout run from the dispatch, and each result costs one write. It claims
// nothing while the bus is away: a claimed job that cannot be published
// would wait out its lease for nothing.
func (b *Bridge) dispatch(ctx context.Context) {
	if len(b.cfg.WorkerTopics) == 0 {
		return
	}
	wake, stop := b.st.Wakeups()
	defer stop()
	fails := 0
	for ctx.Err() == nil {
		n, err := b.dispatchOnce(ctx)
		if err != nil {
			fails++
			if fails == 1 || fails%20 == 0 {
				b.log.Warn("bus dispatch failed; retrying", "err", err, "failures", fails)
			}
			if !b.pause(ctx, backoff(fails)) {
				return
			}
			continue
		}
		fails = 0
		if n > 0 {
			continue // more may be waiting
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-b.out.freed:
		case <-b.cfg.Clock.After(time.Second):
		}
	}
}

// errAway is a pass skipped because the bus is unreachable.
var errAway = fmt.Errorf("the bus is unreachable")

// dispatchOnce claims up to Batch jobs and publishes them; it returns how
// many it claimed. A job whose publish fails is released (requeued without
// spending an attempt on it).
func (b *Bridge) dispatchOnce(ctx context.Context) (int, error) {
	if !b.connected() {
		return 0, errAway
	}
	limit := min(b.cfg.Batch, b.out.room(b.cfg.Clock.Now(), b.cfg.MaxDispatched))
	if limit <= 0 {
		return 0, nil
	}
	jobs, err := b.st.JobClaim(ctx, &store.JobClaimParams{WorkerID: b.cfg.owner(), Queues: []string{b.cfg.Queue},
		Topics: b.cfg.WorkerTopics, Limit: limit, LeaseTTL: b.cfg.LeaseTTL, Start: true})
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	for _, j := range jobs {
		b.out.add(j, *j.LeaseExpiresAt)
	}
	futures := make([]jetstream.PubAckFuture, len(jobs))
	for i, j := range jobs {
		futures[i], err = b.js.PublishMsgAsync(b.dispatchMsg(j), jetstream.WithMsgID(fmt.Sprintf("%s:%d", j.ID, j.Attempt)))
		if err != nil {
			futures[i] = nil
		}
	}
	var failed error
	for i, f := range futures {
		if f != nil {
			select {
			case <-f.Ok():
				b.m.dispatched.Inc()
				continue
			case err = <-f.Err():
			case <-ctx.Done():
				err = ctx.Err()
			case <-b.cfg.Clock.After(10 * time.Second):
				err = fmt.Errorf("no publish ack in 10s")
			}
		}
		failed = err
		b.release(ctx, jobs[i], err)
	}
	return len(jobs), failed
}

// dispatchMsg is the message that hands j to a bus worker.
func (b *Bridge) dispatchMsg(j lifecycle.Job) *nats.Msg {
	d := Dispatch{JobRequest: requestOf(j), StintJobID: j.ID, Attempt: j.Attempt, LeaseID: j.LeaseID, LeaseExpiresAt: j.LeaseExpiresAt}
	m := nats.NewMsg(b.cfg.DispatchPrefix + j.Topic)
	m.Data, _ = json.Marshal(d)
	return m
}

// release gives back a job that could not be dispatched.
func (b *Bridge) release(ctx context.Context, j lifecycle.Job, cause error) {
	b.out.done(j.ID)
	_, err := b.st.JobRelease(context.WithoutCancel(ctx), &store.JobReleaseParams{
		OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Reason: "bus publish failed: " + cause.Error(), Requeue: true})
	if err != nil {
		b.log.Warn("bus could not release an undispatched job; it returns when its lease expires", "job", j.ID, "err", err)
	}
}
