package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// timer is the output of a sleep or wait record: until a time, or for how
// long counted from the record's time on the store's clock.
type timer struct {
	ForMS int64      `json:"for_ms,omitempty"`
	Until *time.Time `json:"until,omitempty"`
}

func (r *Run) timerStep(ctx context.Context, name, kind string, d time.Duration) (time.Time, error) {
	return r.timer(ctx, name, kind, timer{ForMS: d.Milliseconds()})
}

func (r *Run) timer(ctx context.Context, name, kind string, tm timer) (time.Time, error) {
	seq, rec, err := r.take(ctx, name, kind)
	if err != nil {
		return time.Time{}, err
	}
	if rec == nil {
		if err := r.before(ctx); err != nil {
			return time.Time{}, err
		}
		out, _ := marshal(tm)
		saved, err := r.save(ctx, store.JobStepParams{Seq: seq, Name: name, Kind: kind, Output: out})
		if err != nil {
			return time.Time{}, err
		}
		rec = &saved
	}
	var t timer
	if err := json.Unmarshal(rec.Output, &t); err != nil {
		return time.Time{}, fmt.Errorf("%w: step %d holds no timer: %v", ErrNondeterministic, seq, err)
	}
	if t.Until != nil {
		return *t.Until, nil
	}
	return rec.RecordedAt.Add(time.Duration(t.ForMS) * time.Millisecond), nil
}

// SleepUntil sleeps durably until t (by the store's clock), as Sleep does.
func (r *Run) SleepUntil(ctx context.Context, name string, t time.Time) error {
	t = t.UTC().Truncate(time.Microsecond)
	until, err := r.timer(ctx, name, store.StepSleep, timer{Until: &t})
	if err != nil {
		return err
	}
	if !r.storeNow().Before(until) {
		return nil
	}
	return r.suspend(ctx, until, store.WaitSleep)
}

// Sleep sleeps d durably: the first time it records the sleep and gives
// the lease back until d after that record (ErrSuspended: the handler
// returns); the attempt that wakes replays to here and goes on.
func (r *Run) Sleep(ctx context.Context, name string, d time.Duration) error {
	until, err := r.timerStep(ctx, name, store.StepSleep, d)
	if err != nil {
		return err
	}
	if !r.storeNow().Before(until) {
		return nil
	}
	return r.suspend(ctx, until, store.WaitSleep)
}

// suspend gives the lease back until until, waiting for wait.
func (r *Run) suspend(ctx context.Context, until time.Time, wait string) error {
	j := r.host.Record()
	rec, err := r.ss.JobSuspend(context.WithoutCancel(ctx), &store.JobSuspendParams{
		OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Until: &until, Wait: wait})
	if err != nil {
		return err
	}
	r.host.Suspended(rec)
	return ErrSuspended
}

// signalOutcome is the output of the record that ends a wait for a signal.
type signalOutcome struct {
	Received bool            `json:"received"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}

// WaitSignal waits up to timeout for the signal name (store.StepStore's
// JobSignal): it returns its payload and true, or false when the timeout
// passed first. A signal sent before the wait counts; the first one wins.
// While it waits the job holds no lease (ErrSuspended: the handler returns).
func (r *Run) WaitSignal(ctx context.Context, name string, timeout time.Duration) (json.RawMessage, bool, error) {
	until, err := r.timerStep(ctx, name, store.StepWait, timeout)
	if err != nil {
		return nil, false, err
	}
	seq, rec, err := r.take(ctx, name, store.StepSignal)
	if err != nil {
		return nil, false, err
	}
	for rec == nil {
		sig, found, err := r.readSignal(context.WithoutCancel(ctx), name)
		if err != nil {
			return nil, false, fmt.Errorf("%w: read signal %q: %v", ErrSaveFailed, name, err)
		}
		if found || !r.storeNow().Before(until) {
			out, _ := marshal(signalOutcome{Received: found, Payload: sig.Payload})
			saved, err := r.save(ctx, store.JobStepParams{Seq: seq, Name: name, Kind: store.StepSignal, Output: out})
			if err != nil {
				return nil, false, err
			}
			rec = &saved
			break
		}
		if err := r.suspend(ctx, until, store.WaitSignal(name)); !errors.Is(err, store.ErrWaitOver) {
			return nil, false, err
		}
	}
	var o signalOutcome
	if err := json.Unmarshal(rec.Output, &o); err != nil {
		return nil, false, fmt.Errorf("%w: step %d holds no signal: %v", ErrNondeterministic, seq, err)
	}
	return o.Payload, o.Received, nil
}

// Child enqueues spec as a child job of this one, once: parent_job_id is
// this job and step_index the step's place. The store enqueues the child
// and records the step naming it in one transaction fenced by the lease
// (store.StepStore's JobStepChild), so a replay finds the same child, and a
// worker over a server's API (whose token may not enqueue) starts children
// too.
func (r *Run) Child(ctx context.Context, name string, spec lifecycle.Spec) (string, error) {
	seq, rec, err := r.take(ctx, name, store.StepChild)
	if err != nil {
		return "", err
	}
	if rec == nil {
		if err := r.before(ctx); err != nil {
			return "", err
		}
		res, err := r.ss.JobStepChild(context.WithoutCancel(ctx), &store.JobStepChildParams{OwnerParams: r.owner(),
			Seq: seq, Name: name, Spec: spec})
		if errors.Is(err, store.ErrValidation) && !errors.Is(err, store.ErrStepTooLarge) {
			return "", err // the child's spec: the handler's to fix
		}
		if err != nil {
			return "", r.saveError(seq, name, err)
		}
		r.took()
		rec = &res.Step
	}
	id, err := store.ChildOf(*rec)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNondeterministic, err)
	}
	return id, nil
}

// Outcome is how an awaited child job ended.
type Outcome struct {
	JobID  string              `json:"job_id"`
	State  lifecycle.State     `json:"state"`
	Result json.RawMessage     `json:"result,omitempty"`
	Error  *lifecycle.JobError `json:"error,omitempty"`
	Reason string              `json:"reason,omitempty"`
}

// Await waits for the child job id (one this job started) to end and
// returns how it ended. While it waits the job holds no lease
// (ErrSuspended: the handler returns); the child's end wakes it, and poll
// bounds each wait in case a wake is missed.
func (r *Run) Await(ctx context.Context, name, id string, poll time.Duration) (Outcome, error) {
	seq, rec, err := r.take(ctx, name, store.StepAwait)
	if err != nil {
		return Outcome{}, err
	}
	for rec == nil {
		c, err := r.readChild(context.WithoutCancel(ctx), id)
		if err != nil {
			return Outcome{}, err
		}
		if c.State.Terminal() {
			o := Outcome{JobID: c.ID, State: c.State, Result: c.Result, Error: c.Error, Reason: c.Reason}
			out, _ := marshal(o)
			saved, err := r.save(ctx, store.JobStepParams{Seq: seq, Name: name, Kind: store.StepAwait, Output: out})
			if err != nil {
				return Outcome{}, err
			}
			rec = &saved
			break
		}
		if poll <= 0 {
			poll = time.Hour
		}
		if err := r.suspend(ctx, r.storeNow().Add(poll), store.WaitChild(id)); !errors.Is(err, store.ErrWaitOver) {
			return Outcome{}, err
		}
	}
	var o Outcome
	if err := json.Unmarshal(rec.Output, &o); err != nil {
		return Outcome{}, fmt.Errorf("%w: step %d holds no outcome: %v", ErrNondeterministic, seq, err)
	}
	return o, nil
}

// readChild reads the child id of this job, as the lease holder when the
// store reads that way (store.LeasedStepReader: over a server's API, where
// a worker token reads only its job's children). A job that is not this
// job's child is refused: its end would never wake this job.
func (r *Run) readChild(ctx context.Context, id string) (store.Job, error) {
	if lr, ok := r.ss.(store.LeasedStepReader); ok {
		o := r.owner()
		return lr.JobChildLeased(ctx, &o, id)
	}
	c, err := r.host.Store().JobGet(ctx, id)
	if err != nil {
		return c, err
	}
	if j := r.host.Record(); c.ParentJobID != j.ID {
		return c, &lifecycle.Error{Kind: store.ErrNotFound, JobID: id,
			Msg: fmt.Sprintf("job %s is not a child of job %s: await the jobs the handler started with StartChild", id, j.ID)}
	}
	return c, nil
}
