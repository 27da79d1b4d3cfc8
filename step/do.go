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

// OnError is what a step's error does.
type OnError int

const (
	// Abort fails the attempt with the step's error, as a handler's error
	// does; nothing is recorded and the next attempt runs the step again.
	Abort OnError = iota
	// Continue records the error as the step's result: the handler gets it
	// back now and on every replay, and goes on.
	Continue
	// Retry runs the step's function again, up to Options.Retries more
	// times, waiting the deterministic backoff between tries; if it still
	// fails, the attempt fails as with Abort.
	Retry
)

// Options tune one step.
type Options struct {
	OnError OnError
	// Retries is how many more times Retry runs the function. Defaults to 3.
	Retries int
	// Backoff spaces the retries (seeded from the job id and the step, so
	// the schedule can be reproduced). Defaults to lifecycle.DefaultBackoff.
	Backoff lifecycle.Backoff
}

// Failed is the error of a step whose error was recorded (Continue): it is
// returned by the step now and on every replay.
type Failed struct {
	Step string
	Err  lifecycle.JobError
}

func (f *Failed) Error() string {
	return fmt.Sprintf("step %q failed: %s: %s", f.Step, f.Err.Code, f.Err.Message)
}

// ErrorCode returns the recorded error's code.
func (f *Failed) ErrorCode() string { return f.Err.Code }

// Do runs the step name: on replay it returns the recorded output (or the
// recorded error, as *Failed) without calling fn; otherwise it checks the
// budget and cancellation, calls fn under the policy of opts, and records
// its output before returning it.
func (r *Run) Do(ctx context.Context, name string, opts Options, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	seq, out, done, err := r.runStep(ctx, name)
	if done || err != nil {
		return out, err
	}
	began := r.host.Clock().Now()
	out, ferr := r.call(ctx, name, seq, opts, fn)
	p := store.JobStepParams{Seq: seq, Name: name, Kind: store.StepRun, Output: out,
		DurationMS: r.host.Clock().Now().Sub(began).Milliseconds()}
	if ferr != nil {
		if opts.OnError != Continue || ctx.Err() != nil {
			return nil, ferr
		}
		p.Status, p.Output = store.StepError, nil
		p.Error = &lifecycle.JobError{Code: errorCode(ferr), Message: ferr.Error()}
	}
	saved, err := r.save(ctx, p)
	if err != nil {
		return nil, err
	}
	return replayed(&saved)
}

// runStep takes the place of the run step name: done with its recorded
// output on replay; otherwise the place (seq) once the budget and
// cancellation allow the step to run.
func (r *Run) runStep(ctx context.Context, name string) (seq int, out json.RawMessage, done bool, err error) {
	seq, rec, err := r.take(ctx, name, store.StepRun)
	if err != nil {
		return seq, nil, true, err
	}
	if rec != nil {
		out, err = replayed(rec)
		return seq, out, true, err
	}
	return seq, nil, false, r.before(ctx)
}

// call runs fn, again under Retry while it fails and attempts remain.
func (r *Run) call(ctx context.Context, name string, seq int, opts Options, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	tries := 1
	if opts.OnError == Retry {
		tries += opts.Retries
		if opts.Retries == 0 {
			tries += 3
		}
	}
	var err error
	for try := 1; ; try++ {
		var out json.RawMessage
		if out, err = fn(ctx); err == nil {
			return out, nil
		}
		if try >= tries || ctx.Err() != nil {
			return nil, err
		}
		key := fmt.Sprintf("%s/%d/%s", r.host.Record().ID, seq, name)
		select {
		case <-r.host.Clock().After(opts.Backoff.OrDefault().Delay(key, try)):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func replayed(rec *store.StepRecord) (json.RawMessage, error) {
	if rec.Status == store.StepError && rec.Error != nil {
		return nil, &Failed{Step: rec.Name, Err: *rec.Error}
	}
	return rec.Output, nil
}

func errorCode(err error) string {
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) && c.ErrorCode() != "" {
		return c.ErrorCode()
	}
	return "error"
}

// Now returns a time recorded as a step: the worker's clock the first time,
// the recorded time on every replay.
func (r *Run) Now(ctx context.Context) (time.Time, error) {
	seq, rec, err := r.take(ctx, "now", store.StepNow)
	if err != nil {
		return time.Time{}, err
	}
	if rec == nil {
		out, _ := marshal(r.host.Clock().Now().UTC())
		saved, err := r.save(ctx, store.JobStepParams{Seq: seq, Name: "now", Kind: store.StepNow, Output: out})
		if err != nil {
			return time.Time{}, err
		}
		rec = &saved
	}
	var t time.Time
	if err := json.Unmarshal(rec.Output, &t); err != nil {
		return time.Time{}, fmt.Errorf("%w: step %d holds no time: %v", ErrNondeterministic, seq, err)
	}
	return t, nil
}

// DoWith runs the step name through record, which both runs its function
// and records the output with the params it is given (a transactional step:
// the function's writes and the record commit together). On replay it
// returns the recorded output without calling record.
func (r *Run) DoWith(ctx context.Context, name string, record func(ctx context.Context, p *store.JobStepParams) (store.StepRecord, error)) (json.RawMessage, error) {
	seq, out, done, err := r.runStep(ctx, name)
	if done || err != nil {
		return out, err
	}
	j := r.host.Record()
	p := &store.JobStepParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Seq: seq, Name: name,
		Kind: store.StepRun, Status: store.StepOK}
	saved, err := record(context.WithoutCancel(ctx), p)
	switch {
	case err == nil:
		r.took()
		return replayed(&saved)
	case errors.Is(err, store.ErrValidation):
		return nil, fmt.Errorf("%w: step %d %q: %w", ErrSaveFailed, seq, name, err)
	}
	return nil, err
}
