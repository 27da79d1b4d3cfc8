package stint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// attempt is one claimed job running in this pool: the handler's context,
// its lease as last renewed, and who gets to report its outcome.
type attempt struct {
	p      *Pool
	job    *Job
	def    JobDefaults // the pool's defaults for the job's kind and queue
	ctx    context.Context
	cancel context.CancelCauseFunc
	began  time.Time // the claim was sent, by the pool's clock
	// claimed is when the claim's reply arrived, by the pool's clock: at or
	// after the store's time of the claim (the record's updated_at).
	claimed time.Time
	done    func() // frees the fetcher's slot

	// lost: the job is no longer ours (lease gone, or the store already
	// finished it): report nothing.
	lost atomic.Bool
	// settled: the outcome was taken care of, by the attempt's own
	// goroutine or by a forced release at shutdown, exactly once.
	settled atomic.Bool

	// beating: a heartbeat request is in flight.
	beating atomic.Bool

	mu sync.Mutex
	// lastBeat is when the last lease grant or renewal that succeeded was
	// sent, by the pool's clock: the lease lasts at least LeaseTTL from then.
	lastBeat time.Time
	expires  time.Time // the lease's expiry as the store last said
	// held is the job as the store last returned it to this attempt (the
	// claim, a renewal): the completion hands it to the store, which then
	// need not read the row (store.JobCompleteParams.Held).
	held *lifecycle.Job
	// took and handlerErr are how long the handler ran and what it
	// returned, for Config.OnOutcome.
	took       time.Duration
	handlerErr error

	// suspended: the handler gave the lease back to sleep or wait
	// (step_api.go); suspendedAs is the job after the suspend.
	suspended   atomic.Bool
	suspendedAs lifecycle.Job

	// recheck asks the heartbeater for one more renewal as soon as the one
	// in flight is done: a lease notice arrived meanwhile.
	recheck atomic.Bool
}

// newAttempt starts tracking a claimed job; sent is when the claim request
// was sent, by the pool's clock (the lease runs from a moment after it).
func newAttempt(p *Pool, rec lifecycle.Job, sent time.Time, done func()) *attempt {
	ctx, cancel := context.WithCancelCause(p.base)
	a := &attempt{p: p, ctx: ctx, cancel: cancel, began: sent, claimed: p.clock.Now(), lastBeat: sent, done: done,
		def: p.cfg.defaultsFor(rec.Kind, rec.Queue)}
	if rec.LeaseExpiresAt != nil {
		a.expires = *rec.LeaseExpiresAt
	}
	a.job = &Job{rec: rec, a: a, checkpoint: rec.Checkpoint}
	a.held = &a.job.rec
	return a
}

// heldRecord is the job as the store last returned it to this attempt.
func (a *attempt) heldRecord() *lifecycle.Job {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

func (a *attempt) owner() store.OwnerParams {
	return store.OwnerParams{JobID: a.job.rec.ID, LeaseID: a.job.rec.LeaseID}
}

// run runs the handler and reports the outcome. It is the attempt's goroutine.
func (a *attempt) run() {
	defer a.p.runs.Done()
	defer a.done()
	a.p.stats.running.Add(1)
	stopWatch := a.watchLimits()
	began := a.p.clock.Now()
	err := callSafely(a.ctx, a.p.mux, a.job)
	stopWatch()
	a.mu.Lock()
	a.took, a.handlerErr = a.p.clock.Now().Sub(began), err
	a.mu.Unlock()
	a.p.stats.running.Add(-1)
	// The attempt keeps heartbeating until its outcome is written, so a slow
	// store cannot let the lease of a finished job expire; the completer
	// untracks the completions it writes.
	if !a.settle(err) {
		a.p.untrack(a)
	}
	a.cancel(context.Canceled)
}

// trustUntil is when this pool stops trusting the lease without news from
// the store: a quarter of the TTL before the lease can have expired, counted
// from when the last successful grant or renewal was sent. Past it the
// handler is cancelled even if a heartbeat request is still hanging, so a
// stuck store call never lets two owners run the job.
func (a *attempt) trustUntil() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	ttl := a.def.LeaseTTL
	return a.lastBeat.Add(ttl - ttl/4)
}

// watchLimits cancels the handler's context at the earliest of the
// attempt's timeout, the job's deadline and its runtime budget, with the
// matching cause. The pool's clock times them, so tests can move it.
func (a *attempt) watchLimits() (stop func()) {
	at, cause := limitOf(a.job.rec)
	if t := a.def.Timeout; a.job.rec.Timeout == 0 && t > 0 && a.job.rec.StartedAt != nil {
		// The job has no timeout of its own: its kind's or queue's applies.
		if end := a.job.rec.UpdatedAt.Add(t); cause == nil || end.Before(at) {
			at, cause = end, fmt.Errorf("%w: attempt %d ran past its default timeout of %s", ErrTimeout, a.job.rec.Attempt, t)
		}
	}
	if cause == nil {
		return func() {}
	}
	// The limit is a store time; turn it into a wait on the pool's clock
	// counted from the claim's reply (the record's updated_at is the store's
	// time of the claim), so the limit fires at or after it passes by the
	// store's clock, never before, whatever the two clocks read.
	wait := at.Sub(a.job.rec.UpdatedAt) - a.p.clock.Now().Sub(a.claimed)
	done := make(chan struct{})
	go func() {
		select {
		case <-a.p.clock.After(wait):
			a.cancel(cause)
		case <-done:
		}
	}()
	return func() { close(done) }
}

// limitOf returns the earliest time limit of an attempt of j and the cause
// to cancel it with; a nil cause means no limit.
func limitOf(j lifecycle.Job) (at time.Time, cause error) {
	if j.TimeoutAt != nil {
		at, cause = *j.TimeoutAt, fmt.Errorf("%w: attempt %d ran past its timeout of %s", ErrTimeout, j.Attempt, j.Timeout.D())
	}
	if j.Deadline != nil && (cause == nil || j.Deadline.Before(at)) {
		at, cause = *j.Deadline, fmt.Errorf("%w: the job's deadline %s passed", ErrDeadline, j.Deadline.Format(time.RFC3339))
	}
	if b := j.Budget; b != nil && b.MaxRuntime > 0 && j.StartedAt != nil {
		if end := j.StartedAt.Add(b.MaxRuntime.D()); cause == nil || end.Before(at) {
			at, cause = end, fmt.Errorf("%w: runtime budget of %s", ErrBudgetExceeded, b.MaxRuntime.D())
		}
	}
	return at, cause
}

// heartbeat renews the lease, optionally reporting progress or phase.
func (a *attempt) heartbeat(ctx context.Context, progress json.RawMessage, phase string) error {
	now := a.p.clock.Now()
	rec, err := a.p.store.JobHeartbeat(ctx, &store.JobHeartbeatParams{
		OwnerParams: a.owner(), LeaseTTL: a.def.LeaseTTL, Progress: progress, Phase: phase,
	})
	a.observe(rec, err)
	if err == nil {
		a.mu.Lock()
		a.lastBeat = now
		a.mu.Unlock()
		return nil
	}
	if !store.IsRejection(err) && !now.Before(a.leaseExpiry()) {
		a.loseLease("it could not be renewed before it expired: " + err.Error())
	}
	return err
}

func (a *attempt) leaseExpiry() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.expires
}

func (a *attempt) sinceBeat(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Sub(a.lastBeat)
}

// observe learns from the reply to an owner operation: a cancel request,
// a halt on budget, or a lease that is gone.
func (a *attempt) observe(rec lifecycle.Job, err error) {
	if err == nil {
		a.mu.Lock()
		if rec.LeaseExpiresAt != nil {
			a.expires = *rec.LeaseExpiresAt
		}
		if rec.ID == a.job.rec.ID {
			a.held = &rec
		}
		a.mu.Unlock()
		switch rec.State {
		case lifecycle.CancelRequested:
			a.cancel(fmt.Errorf("%w: %s", ErrCancelRequested, rec.Reason))
		case lifecycle.Halted:
			a.lost.Store(true)
			a.cancel(fmt.Errorf("%w: %s", ErrBudgetExceeded, rec.Reason))
		}
		return
	}
	var le *lifecycle.Error
	if !errors.As(err, &le) {
		return
	}
	switch {
	case errors.Is(err, ErrStaleLease) && le.State == lifecycle.Halted:
		// Halted on budget by one of this attempt's own checkpoints (a
		// renewal the halt's notice asked for can beat the checkpoint's own
		// reply here): not a lost lease, and nothing left to report.
		a.lost.Store(true)
		a.cancel(fmt.Errorf("%w: the job was halted", ErrBudgetExceeded))
	case errors.Is(err, ErrStaleLease):
		a.loseLease(lostReason(le))
	case le.State == lifecycle.CancelRequested:
		a.cancel(fmt.Errorf("%w: (noticed on %s)", ErrCancelRequested, le.Op))
	}
}

func lostReason(le *lifecycle.Error) string {
	switch le.State {
	case lifecycle.Cancelled:
		return "the job was cancelled"
	case lifecycle.TimedOut:
		return "the job timed out"
	case lifecycle.Stalled, lifecycle.Queued:
		return "the lease expired and the job was taken back"
	case lifecycle.Retrying:
		return "the attempt ran past its timeout"
	case lifecycle.DeadLettered:
		return "the job was dead-lettered"
	}
	return le.Msg
}

// loseLease marks the job as no longer ours and cancels the handler.
func (a *attempt) loseLease(why string) {
	// Once the attempt's own report is under way, that report says how it
	// ended (a renewal racing it finds the job already finished by it).
	if a.lost.CompareAndSwap(false, true) && !a.settled.Load() {
		a.p.stats.stale.Add(1)
		a.p.log.Warn("stint: lost the lease of a running job; its handler is cancelled and nothing it reports will count",
			a.jobLog("reason", why)...)
	}
	a.cancel(fmt.Errorf("%w: %s", ErrLeaseLost, why))
}

// forceRelease gives the job back while its handler is still running (it
// ignored cancellation at shutdown). Whatever the handler reports later is
// dropped here, and would be rejected by the store as stale anyway.
func (a *attempt) forceRelease() {
	if !a.settled.CompareAndSwap(false, true) {
		return
	}
	a.p.untrack(a)
	a.cancel(ErrShutdown)
	a.release("the worker stopped and the handler did not return")
}
