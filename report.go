package stint

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Each method here is one write to the store, fenced on the attempt's lease.
// They run even when ctx is cancelled (ctx only carries values), so a handler
// whose context was cancelled can still save its state before it returns.

// Checkpoint saves state (marshalled to JSON; nil keeps the previous one) as
// the point a later attempt resumes from, and reports steps and cost used
// since the last checkpoint against the job's budget. When the budget is
// exceeded the job is halted with this checkpoint kept, the handler's
// context is cancelled and Checkpoint returns an error wrapping
// [ErrBudgetExceeded]; the handler should return it, and nothing else is
// reported. It also fails (with [ErrStaleLease] or [ErrInvalidTransition])
// once the job was taken away or a cancel was requested.
func (j *Job) Checkpoint(ctx context.Context, state any, steps, cost int64) error {
	var raw json.RawMessage
	if state != nil {
		b, err := json.Marshal(state)
		if err != nil {
			return fmt.Errorf("stint: checkpoint of job %s: marshal the state: %w", j.rec.ID, err)
		}
		raw = b
	}
	rec, err := j.a.p.store.JobCheckpoint(context.WithoutCancel(ctx), &store.JobCheckpointParams{
		OwnerParams: j.a.owner(), Checkpoint: raw, Steps: steps, Cost: cost,
	})
	j.a.observe(rec, err)
	if err != nil {
		return err
	}
	if rec.State == lifecycle.Halted {
		return fmt.Errorf("%w: job %s is halted: %s", ErrBudgetExceeded, j.rec.ID, rec.Reason)
	}
	if raw != nil {
		j.mu.Lock()
		j.checkpoint = raw
		j.mu.Unlock()
	}
	return nil
}

// Progress records v (marshalled to JSON) as the job's progress, for people
// watching it. It also renews the lease. Each call is a write: report at a
// human pace, not per item.
func (j *Job) Progress(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stint: progress of job %s: marshal: %w", j.rec.ID, err)
	}
	return j.a.heartbeat(context.WithoutCancel(ctx), b, "")
}

// Phase records the stage the attempt is in (for example "starting",
// "uploading"). It also renews the lease.
func (j *Job) Phase(ctx context.Context, phase string) error {
	if phase == "" {
		return fmt.Errorf("stint: phase of job %s: the phase is empty", j.rec.ID)
	}
	return j.a.heartbeat(context.WithoutCancel(ctx), nil, phase)
}

// SetResult sets the job's result (marshalled to JSON), recorded when the
// handler returns nil. The last call wins; without one the result is null.
func (j *Job) SetResult(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stint: result of job %s: marshal: %w", j.rec.ID, err)
	}
	if len(b) > lifecycle.MaxPayloadBytes {
		return fmt.Errorf("stint: result of job %s is %d bytes, over the limit of %d: store it elsewhere and use SetResultPtr", j.rec.ID, len(b), lifecycle.MaxPayloadBytes)
	}
	j.mu.Lock()
	j.result = b
	j.mu.Unlock()
	return nil
}

// SetResultPtr records where a large result was stored (an opaque URI)
// instead of the result itself.
func (j *Job) SetResultPtr(uri string) {
	j.mu.Lock()
	j.resultPtr = uri
	j.mu.Unlock()
}

func (j *Job) results() (json.RawMessage, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.result, j.resultPtr
}
