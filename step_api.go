package stint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/store"
)

// Durable steps (docs/steps.md). A handler may run its work as named,
// ordered steps: each step's result is recorded (fenced by the attempt's
// lease) before the handler goes on, and a later attempt gets it back
// without running the step again.

// StepOption tunes one step.
type StepOption func(*step.Options)

// OnErrorContinue records a step's error as its result: the step returns
// it now and on every replay (as a *StepFailed), and the handler goes on.
func OnErrorContinue() StepOption { return func(o *step.Options) { o.OnError = step.Continue } }

// OnErrorRetry runs a failing step's function up to n more times with the
// deterministic backoff b (zero: the default backoff) before the attempt
// fails as with any other error.
func OnErrorRetry(n int, b lifecycle.Backoff) StepOption {
	return func(o *step.Options) { o.OnError, o.Retries, o.Backoff = step.Retry, n, b }
}

// StepFailed is the recorded error of a step run with OnErrorContinue.
type StepFailed = step.Failed

// ChildOutcome is how an awaited child job ended.
type ChildOutcome = step.Outcome

// Step runs fn as the step name of j's handler, at most once to success per
// job across attempts: its result (marshalled to JSON, at most
// store.MaxStepBytes) is recorded before Step returns, and on a later
// attempt Step returns the recorded result without calling fn. Steps must
// come in the same order, with the same names, on every attempt; a handler
// that asks for another step where one is recorded fails the job with the
// reason code "nondeterministic". Before fn runs, the job's step budget and
// cancellation are checked. By default an error of fn fails the attempt
// (and the step runs again on the next one); see OnErrorContinue and
// OnErrorRetry.
func Step[T any](ctx context.Context, j *Job, name string, fn func(context.Context) (T, error), opts ...StepOption) (T, error) {
	var o step.Options
	for _, opt := range opts {
		opt(&o)
	}
	out, err := j.steps().Do(ctx, name, o, func(ctx context.Context) (json.RawMessage, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return marshalStep(name, v)
	})
	return decodeStep[T](name, out, err)
}

// marshalStep is a step's result as it is recorded.
func marshalStep(name string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Permanent(fmt.Errorf("stint: step %q: marshal its result: %w", name, err))
	}
	return b, nil
}

// decodeStep turns a step's recorded output (or its error) into the
// step's typed result.
func decodeStep[T any](name string, out json.RawMessage, err error) (T, error) {
	var v T
	if err != nil {
		return v, stepError(err)
	}
	if err := json.Unmarshal(out, &v); err != nil {
		var zero T
		return zero, stepError(fmt.Errorf("%w: step %q recorded %s, which does not decode into %T: %v", step.ErrNondeterministic, name, clipOutput(out), v, err))
	}
	return v, nil
}

// stepError turns the engine's errors into the outcomes they stand for.
func stepError(err error) error {
	var f *step.Failed
	switch {
	case errors.As(err, &f):
		return err
	case errors.Is(err, step.ErrNondeterministic):
		return Permanent(WithCode(step.CodeNondeterministic, err))
	case errors.Is(err, step.ErrSaveFailed) && errors.Is(err, store.ErrValidation):
		return Permanent(WithCode(step.CodeSaveFailed, err)) // it will not fit next time either
	case errors.Is(err, step.ErrSaveFailed):
		return WithCode(step.CodeSaveFailed, err)
	case errors.Is(err, step.ErrBudget):
		return Halt(err.Error())
	}
	return err
}

func clipOutput(b json.RawMessage) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Sleep sleeps d durably as the step name: the job gives its lease back and
// is woken d after the sleep was first recorded, by the store's clock,
// whatever happens to this worker meanwhile; no attempt is spent. The first
// time, Sleep returns an error wrapping [ErrSuspended]: return it from the
// handler. The attempt that wakes replays its steps to here and goes on.
func (j *Job) Sleep(ctx context.Context, name string, d time.Duration) error {
	return stepError(j.steps().Sleep(ctx, name, d))
}

// SleepUntil sleeps durably until t, by the store's clock, as the step
// name; see [Job.Sleep].
func (j *Job) SleepUntil(ctx context.Context, name string, t time.Time) error {
	return stepError(j.steps().SleepUntil(ctx, name, t))
}

// WaitSignal waits up to timeout for the signal name ([Client.Signal]) as
// the step name: it returns the signal's payload and true, or false when
// the timeout passed first. A signal sent before the wait counts; the first
// of a name wins. While it waits the job holds no lease: WaitSignal returns
// an error wrapping [ErrSuspended] to return from the handler.
func (j *Job) WaitSignal(ctx context.Context, name string, timeout time.Duration) (json.RawMessage, bool, error) {
	p, ok, err := j.steps().WaitSignal(ctx, name, timeout)
	return p, ok, stepError(err)
}

// StartChild enqueues spec as a child job, once, as the step name: its
// parent_job_id is this job and its step_index the step's place. The child
// and the step's record are written in one transaction fenced by the
// lease, on a database or over a server's API (a worker token may start
// children). It returns the child's id (the same one on every replay).
func (j *Job) StartChild(ctx context.Context, name string, spec Spec) (string, error) {
	id, err := j.steps().Child(ctx, name, spec)
	return id, stepError(err)
}

// AwaitChild waits, as the step name, for the child job id (one this job
// started) to end and returns how it ended. While it waits the job holds no lease (an error
// wrapping [ErrSuspended]: return it); the child's end wakes the job.
func (j *Job) AwaitChild(ctx context.Context, name, id string) (ChildOutcome, error) {
	o, err := j.steps().Await(ctx, name, id, time.Hour)
	return o, stepError(err)
}

// Now returns the time as a recorded step: the worker's clock the first
// time, the same time on every replay. Handlers read time this way, never
// with time.Now, so a replay sees what the first run saw.
func (j *Job) Now(ctx context.Context) (time.Time, error) {
	t, err := j.steps().Now(ctx)
	return t, stepError(err)
}

// Rand returns a random source seeded from the job's seed (set at enqueue
// in env stint.seed, else derived from the job's id): the same draws in
// the same order give the same values on every attempt.
func (j *Job) Rand() *rand.Rand { return j.steps().Rand() }

// Seed returns the job's seed.
func (j *Job) Seed() int64 { return step.Seed(j.rec) }

// ErrSuspended is what a durable sleep or wait returns the first time: the
// job gave its lease back and is woken later; the handler must return it.
var ErrSuspended = step.ErrSuspended

// steps returns the attempt's step state, made at the first step.
func (j *Job) steps() *step.Run {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stepRun == nil {
		j.stepRun = step.New(stepHost{j})
	}
	return j.stepRun
}

// stepHost gives the step engine what it needs of the attempt.
type stepHost struct{ j *Job }

func (h stepHost) Record() lifecycle.Job { return h.j.rec }
func (h stepHost) Store() store.Store    { return h.j.a.p.store }
func (h stepHost) Clock() clock.Clock    { return h.j.a.p.clock }
func (h stepHost) Claimed() time.Time    { return h.j.a.claimed }
func (h stepHost) Suspended(rec lifecycle.Job) {
	a := h.j.a
	a.mu.Lock()
	a.suspendedAs = rec
	a.mu.Unlock()
	a.suspended.Store(true)
	a.lost.Store(true) // the lease is gone on purpose: renew nothing, warn of nothing
}

// Signal sends the signal name with payload (marshalled to JSON; nil for
// none) to the job id. The first signal of a name wins and is kept (even
// when sent before the job waits for it); a job suspended waiting for it
// is woken at once. A second signal of the same name is refused with an
// error wrapping store.ErrSignalTaken; a finished job refuses signals.
func (c *Client) Signal(ctx context.Context, id, name string, payload any) (store.Signal, error) {
	ss, err := store.Steps(c.s)
	if err != nil {
		return store.Signal{}, err
	}
	var raw json.RawMessage
	if payload != nil {
		if raw, err = json.Marshal(payload); err != nil {
			return store.Signal{}, fmt.Errorf("stint: signal %s to job %s: marshal the payload: %w", name, id, err)
		}
	}
	return ss.JobSignal(ctx, &store.JobSignalParams{JobID: id, Name: name, Payload: raw, ActorID: c.cfg.ActorID})
}

// Steps returns the recorded steps of the job id, in order: a halted or
// failed job's completed steps are its partial result.
func (c *Client) Steps(ctx context.Context, id string) ([]store.StepRecord, error) {
	ss, err := store.Steps(c.s)
	if err != nil {
		return nil, err
	}
	return ss.JobSteps(ctx, id)
}

// TxStepper is a store that runs a step's function in a transaction of its
// own database and records the step in that same transaction: the
// PostgreSQL driver (*postgres.Driver, with Tx = pgx.Tx).
type TxStepper[Tx any] interface {
	StepInTx(ctx context.Context, p *store.JobStepParams, fn func(context.Context, Tx) (json.RawMessage, error)) (store.StepRecord, error)
}

// StepTx is a transactional step: fn gets the transaction in which the
// step's record will commit (db is the job store's PostgreSQL driver), so
// the handler's own writes to that database and the step's result commit
// together, fenced by the attempt's lease like every step. A stale lease,
// an error of fn or a failed commit rolls both back, and the next attempt
// runs the step again; once committed, replays return the recorded result.
// Database side effects happen exactly once.
func StepTx[T, Tx any](ctx context.Context, j *Job, db TxStepper[Tx], name string, fn func(context.Context, Tx) (T, error)) (T, error) {
	out, err := j.steps().DoWith(ctx, name, func(ctx context.Context, p *store.JobStepParams) (store.StepRecord, error) {
		began := j.a.p.clock.Now()
		return db.StepInTx(ctx, p, func(ctx context.Context, tx Tx) (json.RawMessage, error) {
			v, err := fn(ctx, tx)
			if err != nil {
				return nil, err
			}
			p.DurationMS = j.a.p.clock.Now().Sub(began).Milliseconds()
			return marshalStep(name, v)
		})
	})
	return decodeStep[T](name, out, err)
}
