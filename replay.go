package stint

import (
	"context"
	"fmt"
)

// Replay enqueues a new job that repeats the dead-lettered job with id: the
// same kind, queue, topic, priority, payload, env, tenant, attempts, timeout,
// budget and correlation, with ReplayOf and ParentJobID set to id and fresh
// attempts. The original stays untouched. Its deadline (an absolute time,
// usually past) and run membership are not carried over.
//
// Replay is idempotent while the replay is live: the new job carries the
// original's dedupe key, or "replay-of:<id>" when it had none, so replaying
// twice returns the same live job. A job that is not dead_lettered is
// refused with an [*Error] wrapping [ErrInvalidTransition].
func (c *Client) Replay(ctx context.Context, id string) (JobRecord, error) {
	old, err := c.s.JobGet(ctx, id)
	if err != nil {
		return JobRecord{}, err
	}
	if old.State != DeadLettered {
		return JobRecord{}, &Error{Kind: ErrInvalidTransition, JobID: id, Op: "replay", State: old.State,
			Msg: fmt.Sprintf("only a dead_lettered job can be replayed; this one is %s (enqueue a new job instead)", old.State)}
	}
	res, err := c.Enqueue(ctx, replaySpec(old))
	if err != nil {
		return JobRecord{}, fmt.Errorf("stint: replay job %s: %w", id, err)
	}
	return res.Job, nil
}

// replaySpec is the spec of a new job that repeats old.
func replaySpec(old JobRecord) Spec {
	key := old.DedupeKey
	if key == "" {
		key = "replay-of:" + old.ID
	}
	s := Spec{
		Kind: old.Kind, Queue: old.Queue, Topic: old.Topic, Priority: old.Priority,
		Payload: old.Payload, ContextPtr: old.ContextPtr, AdapterID: old.AdapterID,
		Env: old.Env, Tenant: old.Tenant, DedupeKey: key,
		Timeout: old.Timeout.D(), MaxAttempts: old.MaxAttempts, OnExhausted: old.OnExhausted,
		CancelGrace: old.CancelGrace.D(), CorrelationID: old.CorrelationID, TraceID: old.TraceID,
		ParentJobID: old.ID, ReplayOf: old.ID,
	}
	if old.Budget != nil {
		b := *old.Budget
		s.Budget = &b
	}
	return s
}
