package stint

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// maxMessage bounds the error message recorded for a failed attempt.
const maxMessage = 32 << 10

// settle reports the outcome of an attempt whose handler returned err.
// The cause of a cancellation the pool made decides an error return; a nil
// return completes the job whatever happened, unless the job is known to be
// no longer ours (the store would reject the report as stale).
//
// It returns true when the outcome went to the completer, which then
// untracks the attempt once the completion is written.
func (a *attempt) settle(err error) bool {
	if !a.settled.CompareAndSwap(false, true) {
		return false
	}
	if a.suspended.Load() { // a durable sleep or wait gave the lease back: nothing to report
		a.mu.Lock()
		rec := a.suspendedAs
		a.mu.Unlock()
		a.outcome("suspend", rec, nil)
		return false
	}
	if a.lost.Load() {
		a.outcome("", JobRecord{}, context.Cause(a.ctx))
		return false
	}
	if err == nil {
		return a.p.comp.add(a)
	}
	var cause error
	if a.ctx.Err() != nil {
		cause = context.Cause(a.ctx)
	}
	switch {
	case errors.Is(cause, ErrLeaseLost):
		// lost is set with this cause; nothing to report.
		a.outcome("", JobRecord{}, cause)
	case errors.Is(cause, ErrCancelRequested):
		a.ackCancel()
	case errors.Is(cause, ErrShutdown):
		a.release("the worker is shutting down")
	case errors.Is(cause, ErrTimeout):
		a.fail(&lifecycle.JobError{Code: ReasonTimeout, Class: lifecycle.ClassTimeout, Message: clip(cause.Error() + ": " + err.Error())})
	case errors.Is(cause, ErrDeadline):
		a.timeOut()
	case errors.Is(cause, ErrBudgetExceeded):
		a.halt(lifecycle.ReasonBudget, cause.Error())
	default:
		a.report(err)
	}
	return false
}

// report carries out the decision of a handler's error.
func (a *attempt) report(err error) {
	c, ok := asControl(err)
	if !ok {
		var pe *PanicError
		if errors.As(err, &pe) {
			a.fail(&lifecycle.JobError{Code: "panic", Message: clip(err.Error())})
			return
		}
		code := errorCode(err, "error")
		e := &lifecycle.JobError{Code: code, Message: clip(err.Error())}
		if a.def.permanent(code) {
			e.Class = lifecycle.ClassPermanent // a retry rule of its kind or queue
		}
		a.fail(e)
		return
	}
	switch c.kind {
	case kindPermanent:
		a.fail(&lifecycle.JobError{Code: errorCode(c.err, "error"), Class: lifecycle.ClassPermanent, Message: clip(errText(c.err))})
	case kindRetryAfter:
		a.failAfter(&lifecycle.JobError{Code: errorCode(c.err, "error"), Message: clip(errText(c.err))}, c.delay)
	case kindHalt:
		a.halt("halted", c.reason)
	case kindDeadLetter:
		if !slices.Contains(lifecycle.DLQReasons, c.code) {
			a.fail(&lifecycle.JobError{Code: "bad_dead_letter_code", Class: lifecycle.ClassPermanent,
				Message: clip("the handler asked to dead-letter with unknown reason code " + c.code + " (use one of the stint.Reason* codes): " + errText(c.err))})
			return
		}
		a.deadLetter(c.code, &lifecycle.JobError{Code: c.code, Message: clip(errText(c.err))})
	}
}

func (a *attempt) execMS() int64 { return a.p.clock.Now().Sub(a.began).Milliseconds() }

// background is the context of the pool's own reports: the handler's values,
// never cancelled, so a report is not lost to a cancelled handler context.
func (a *attempt) background() context.Context { return a.p.base }

func (a *attempt) fail(e *lifecycle.JobError) { a.failAfter(e, 0) }

// failAfter fails the attempt; a positive retryAfter replaces the backoff.
// The delay goes to the store as a delay, resolved on the store's clock: a
// worker whose clock is off must not move the retry.
func (a *attempt) failAfter(e *lifecycle.JobError, retryAfter time.Duration) {
	rec, err := a.p.store.JobFail(a.background(), &store.JobFailParams{
		OwnerParams: a.owner(), Error: *e, RetryAfter: retryAfter, Backoff: a.def.Backoff, ExecutionMS: a.execMS(),
	})
	if a.reported("fail", rec, err) {
		a.p.stats.failed.Add(1)
		a.p.log.Info("stint: job attempt failed", a.jobLog("kind", rec.Kind,
			"state", rec.State, "code", e.Code, "error", firstLine(e.Message))...)
	}
}

func (a *attempt) halt(code, reason string) {
	rec, err := a.p.store.JobHalt(a.background(), &store.JobHaltParams{
		OwnerParams: a.owner(), ReasonCode: code, Reason: reason, ExecutionMS: a.execMS(),
	})
	if !a.ackIfCancelRequested(err) {
		a.reported("halt", rec, err)
	}
}

func (a *attempt) deadLetter(code string, e *lifecycle.JobError) {
	rec, err := a.p.store.JobDeadLetter(a.background(), &store.JobDeadLetterParams{OwnerParams: a.owner(), ReasonCode: code, Error: e})
	if !a.ackIfCancelRequested(err) {
		a.reported("dead_letter", rec, err)
	}
}

// ackIfCancelRequested acknowledges the cancel when a report was refused
// because a cancel was requested meanwhile (halt and dead_letter have no row
// from cancel_requested): the job ends cancelled now, not at the cancel
// deadline. It reports whether it did.
func (a *attempt) ackIfCancelRequested(err error) bool {
	var le *lifecycle.Error
	if !errors.As(err, &le) || !errors.Is(err, store.ErrInvalidTransition) || le.State != lifecycle.CancelRequested {
		return false
	}
	a.ackCancel()
	return true
}

func (a *attempt) ackCancel() {
	rec, err := a.p.store.JobAckCancel(a.background(), ptr(a.owner()))
	a.reported("ack_cancel", rec, err)
}

// release gives the job back, requeued at once (or dead-lettered when no
// attempts are left). A job whose cancel was requested meanwhile is
// acknowledged instead, since a cancel_requested job cannot be released.
func (a *attempt) release(reason string) {
	rec, err := a.p.store.JobRelease(a.background(), &store.JobReleaseParams{OwnerParams: a.owner(), Reason: reason, Requeue: true})
	var le *lifecycle.Error
	if errors.As(err, &le) && errors.Is(err, ErrInvalidTransition) && le.State == lifecycle.CancelRequested {
		a.ackCancel()
		return
	}
	a.reported("release", rec, err)
}

// timeOut ends a job whose deadline passed. No owner operation does that,
// so the pool applies the system's time_out, as the timeouts service would;
// the lifecycle checks the deadline against the store's clock. If that
// clock disagrees, the job is released for the timeouts service to end.
func (a *attempt) timeOut() {
	rec, err := a.p.store.JobApply(a.background(), &store.JobApplyParams{
		JobID:   a.job.rec.ID,
		Command: lifecycle.Command{Op: lifecycle.OpTimeOut, Actor: lifecycle.ActorSystem, ActorID: a.p.cfg.WorkerID, Deadline: true},
	})
	if errors.Is(err, ErrInvalidTransition) {
		a.release("the deadline passed by the worker's clock")
		return
	}
	a.reported("time_out", rec, err)
}

// reported logs and counts a report the store refused, tells
// Config.OnOutcome how the attempt ended, and says whether it was accepted.
func (a *attempt) reported(op string, rec JobRecord, err error) bool {
	a.outcome(op, rec, err)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrStaleLease):
		a.p.stats.stale.Add(1)
		a.p.log.Warn("stint: a report was rejected: the job is no longer this worker's", a.jobLog("op", op, "error", err)...)
	case store.IsRejection(err):
		a.p.log.Warn("stint: a report was rejected", a.jobLog("op", op, "error", err)...)
	default:
		a.p.log.Error("stint: could not report a job's outcome; it is retried when its lease expires", a.jobLog("op", op, "error", err)...)
	}
	return false
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "... (truncated)"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func ptr[T any](v T) *T { return &v }
