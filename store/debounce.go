package store

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// DebounceSinceEnv is the env key where a debounced job keeps the time of
// the first enqueue of its chain of replacements, for MaxWait.
const DebounceSinceEnv = "stint.debounce_since"

// debouncePrefix marks the dedupe keys of debounced jobs: the database's
// one-live-job-per-(tenant, dedupe key) index is what keeps one live job
// per debounce key, even under concurrent enqueues from many processes.
const debouncePrefix = "debounce:"

// Debouncer is implemented by every Store [New] returns.
type Debouncer interface {
	// JobDebounce enqueues spec to run Delay from now unless a job with the
	// same tenant and debounce key is still pending (scheduled or queued):
	// then that one is cancelled (reason "debounced") and the new one,
	// with the new payload, takes its place, its due time pushed back to
	// Delay from now but never past MaxWait after the first enqueue of the
	// chain. Both happen in one transaction: there is never more than one
	// live job per key. When the key's job is already claimed or running,
	// it is returned (Existing) and nothing is written.
	JobDebounce(ctx context.Context, p *JobDebounceParams) (DebounceResult, error)
}

var _ Debouncer = (*engine)(nil)

// JobDebounceParams are one debounced enqueue.
type JobDebounceParams struct {
	// Spec is the job; its DedupeKey and RunAt must be empty (the debounce
	// sets them).
	Spec lifecycle.Spec
	// Key names what is debounced, per tenant; required.
	Key string
	// Delay is how long after the last enqueue the job runs; required.
	Delay time.Duration
	// MaxWait, when set, bounds how long after the first enqueue of a chain
	// of replacements the job runs.
	MaxWait time.Duration
	ActorID string
	Now     *time.Time
}

// DebounceResult is the job a debounced enqueue left live for the key.
type DebounceResult struct {
	Job Job
	// Replaced is the id of the pending job this enqueue cancelled, if any.
	Replaced string
	// Existing: the key's job was already claimed or running; nothing changed.
	Existing bool
}

// Debounce returns s's Debouncer, or ErrUnsupported.
func Debounce(s Store) (Debouncer, error) {
	if d, ok := As[Debouncer](s); ok {
		return d, nil
	}
	return nil, fmt.Errorf("debounce: %w", ErrUnsupported)
}

func (p *JobDebounceParams) validate() error {
	switch {
	case p.Delay <= 0:
		return lifecycle.Validationf("debounce delay %s: give a positive delay such as 5s", p.Delay)
	case p.MaxWait < 0:
		return lifecycle.Validationf("debounce max wait %s is negative: give a positive duration, or 0 for none", p.MaxWait)
	case p.Spec.DedupeKey != "" || p.Spec.RunAt != nil:
		return lifecycle.Validationf("a debounced job sets its own dedupe key and run_at: leave them empty")
	}
	return lifecycle.CheckName("debounce key", p.Key)
}

func (e *engine) JobDebounce(ctx context.Context, p *JobDebounceParams) (DebounceResult, error) {
	if err := p.validate(); err != nil {
		return DebounceResult{}, err
	}
	var out DebounceResult
	err := e.write(ctx, func(tx Tx, b *batch) error {
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		spec := p.Spec
		spec.DedupeKey = debouncePrefix + p.Key
		if err := spec.Validate(t); err != nil {
			return err
		}
		// Another writer may commit a job for the key between the lookup
		// and the insert (enqueue then returns it as existing): go again,
		// and replace that one.
		for range 100 {
			done, err := e.debounceOnce(ctx, tx, b, p, spec, t, &out)
			if err != nil || done {
				return err
			}
		}
		return fmt.Errorf("debounce key %q: %w", p.Key, ErrRevisionConflict)
	})
	return out, err
}

// debounceOnce replaces the key's pending job with spec, or finds it
// running. done is false when a concurrent writer got in first.
func (e *engine) debounceOnce(ctx context.Context, tx Tx, b *batch, p *JobDebounceParams, spec lifecycle.Spec, t time.Time, out *DebounceResult) (done bool, err error) {
	*out = DebounceResult{}
	old, found, err := e.pendingByKey(ctx, tx, spec.Tenant, spec.DedupeKey)
	if err != nil {
		return false, err
	}
	first := t
	if found {
		if old.State != lifecycle.Scheduled && old.State != lifecycle.Queued {
			*out = DebounceResult{Job: old, Existing: true}
			return true, nil
		}
		if since, err := time.Parse(time.RFC3339Nano, old.Env[DebounceSinceEnv]); err == nil {
			first = since
		}
		if err := e.replace(ctx, tx, old, p.ActorID, t); err != nil {
			return false, err
		}
		out.Replaced = old.ID
	}
	runAt := t.Add(p.Delay)
	if p.MaxWait > 0 && runAt.After(first.Add(p.MaxWait)) {
		runAt = first.Add(p.MaxWait)
	}
	spec.RunAt = &runAt
	spec.Env = maps.Clone(spec.Env)
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env[DebounceSinceEnv] = first.UTC().Format(time.RFC3339Nano)
	res, err := e.enqueue(ctx, tx, b, &JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: p.ActorID, Now: &t})
	if err != nil || res[0].Existing {
		return false, err
	}
	out.Job = res[0].Job
	return true, nil
}

// pendingByKey returns the live job with the debounce dedupe key, locked
// where the backend locks rows. One seen finished once locked (a concurrent
// debounce replaced it and committed) counts as none: the enqueue then
// meets its replacement, and JobDebounce goes again.
func (e *engine) pendingByKey(ctx context.Context, tx Tx, tenant, key string) (lifecycle.Job, bool, error) {
	j, ok, err := tx.JobLiveByDedupe(ctx, tenant, key)
	if err != nil || !ok {
		return j, ok, err
	}
	locked, err := tx.JobGet(ctx, []string{j.ID})
	if err != nil || len(locked) != 1 || locked[0].State.Terminal() {
		return lifecycle.Job{}, false, err
	}
	return locked[0], true, nil
}

// replace cancels the pending job old and writes that at once, so the new
// job can take the dedupe key in the same transaction (a batch writes its
// inserts before its updates).
func (e *engine) replace(ctx context.Context, tx Tx, old lifecycle.Job, actorID string, t time.Time) error {
	c := lifecycle.Command{Op: lifecycle.OpCancel, Actor: lifecycle.ActorClient, ActorID: actorID,
		Reason: "debounced: replaced by a newer enqueue with the same debounce key"}
	s, err := lifecycle.Apply(old, c, notBefore(t, old))
	if err != nil {
		return err
	}
	var cancel batch
	cancel.add(&old, s)
	return cancel.flush(ctx, tx)
}
