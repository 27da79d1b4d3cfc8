package stint

import "time"

// Outcome is what became of one attempt, as the store recorded it: the
// pool's Config.OnOutcome hears of every attempt once, after the store
// answered its report, so that nothing narrates a success the store refused.
type Outcome struct {
	// Job is the job as the store left it after the report (its State says
	// how the attempt ended), or as claimed when the report was not
	// accepted.
	Job JobRecord
	// Op is the report the pool made: "complete", "fail", "halt",
	// "dead_letter", "ack_cancel", "release", "time_out" or "suspend" (a
	// durable sleep or wait gave the lease back); empty when the
	// pool reported nothing because the job was no longer its own.
	Op string
	// Took is how long the handler ran.
	Took time.Duration
	// HandlerErr is what the handler returned.
	HandlerErr error
	// Err is why the attempt's report did not count: the store rejected it
	// (wrapping [ErrStaleLease] when the job was cancelled, timed out or
	// taken back meanwhile; [ErrLeaseLost] when the pool learned of that
	// first and reported nothing; [ErrBudgetExceeded] when the store halted
	// the job on its budget), or the store could not be reached. Nil when
	// the store accepted the report.
	Err error
}

// Accepted reports whether the store accepted the attempt's report.
func (o Outcome) Accepted() bool { return o.Err == nil }

// outcome tells Config.OnOutcome how the attempt ended: rec is the job as
// the store returned it (ignored when err is set).
func (a *attempt) outcome(op string, rec JobRecord, err error) {
	hook := a.p.cfg.OnOutcome
	if hook == nil {
		return
	}
	if err != nil || rec.ID == "" {
		rec = a.job.rec
	}
	a.mu.Lock()
	took, herr := a.took, a.handlerErr
	a.mu.Unlock()
	hook(Outcome{Job: rec, Op: op, Took: took, HandlerErr: herr, Err: err})
}
