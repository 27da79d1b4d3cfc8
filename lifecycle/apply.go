package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Apply performs cmd on job at time now. It returns the job after the command
// and its event, an idempotent no-op (Step.Event nil, job unchanged), or a
// typed *Error and no change. job is never modified.
//
// A command whose result already holds (the same owner lease reaching the
// same state again, or a client cancel of an already-cancelled job) is a
// no-op. Repeats detected by request id are the store's to catch, since only
// it sees the event log.
func Apply(job Job, cmd Command, now time.Time) (Step, error) {
	cmd = cmd.cleaned()
	if err := cmd.validate(&job); err != nil {
		return Step{}, err
	}
	if job.State == "" {
		return Step{}, reject(ErrInvalidTransition, &job, cmd.Op, "the job does not exist yet: enqueue it first")
	}
	if cmd.Actor == ActorOwner && cmd.Op != OpClaim && job.State.Leased() && job.LeaseID == cmd.LeaseID {
		if err := fence(job, cmd, now); err != nil { // an expired lease is stale, even for a repeat
			return Step{}, err
		}
	}
	if already(job, cmd) {
		return Step{Job: job}, nil
	}
	if cmd.Actor == ActorOwner && cmd.Op != OpClaim {
		if err := fence(job, cmd, now); err != nil {
			return Step{}, err
		}
	}
	if !sources(cmd.Op, cmd.Actor, job.State) {
		return Step{}, invalid(job, cmd)
	}
	next := job.Clone()
	if FailedAttempt(cmd.Op, cmd.Actor, job.State) {
		// Counted first: the retry budget (failTo, requeue) includes this one.
		next.Failures++
	}
	op, actor, evType, err := transition(&next, cmd, now)
	if err != nil {
		return Step{}, err
	}
	edge, ok := findEdge(op, actor, job.State, next.State)
	if !ok || edge.Event != evType {
		return Step{}, fmt.Errorf("lifecycle: %s by %s from %s to %s (%s) is not in the table", op, actor, job.State, next.State, evType)
	}
	next.Rev = job.Rev + 1
	next.UpdatedAt = now
	settle(&next, job, actor, now)
	if err := Check(next); err != nil {
		return Step{}, fmt.Errorf("lifecycle: %s produced an invalid job: %w", op, err)
	}
	actorID := cmd.ActorID
	if actorID == "" && cmd.Actor == ActorOwner {
		actorID = job.Owner // owner ops present a lease; the event names whose
	}
	ev := newEvent(next, job.State, op, actor, actorID, cmd.RequestID, cmd.LeaseID, now)
	ev.Type = evType
	ev.Reason = next.Reason
	if evType == EventRetryScheduled || evType == EventFailed || evType == EventTimedOut || evType == EventDeadLettered {
		ev.Details = errorDetails(next)
	}
	if op == OpClaim || (ev.LeaseID == "" && job.LeaseID != "") {
		ev.LeaseID = firstNonEmpty(next.LeaseID, job.LeaseID)
	}
	stamp(&ev, job, next, cmd)
	if evType == EventStepRecorded {
		ev.Details = stepDetails(cmd)
	}
	if (evType == EventHeartbeat || evType == EventCheckpointed) && next.Phase != job.Phase {
		ev.Details = phaseDetails(next.Phase) // the owner entered a new phase: the log keeps it
	}
	return Step{Job: next, Event: &ev}, nil
}

// validate checks the command's own fields, before the job is looked at.
func (c Command) validate(j *Job) error {
	if !slices.ContainsFunc(Table, func(e Edge) bool { return e.Op == c.Op }) || c.Op == OpEnqueue {
		return reject(ErrValidation, j, c.Op, "unknown operation %q", c.Op)
	}
	if c.Actor != ActorClient && c.Actor != ActorOwner && c.Actor != ActorSystem {
		return reject(ErrValidation, j, c.Op, "unknown actor %q: expected client, owner or system", c.Actor)
	}
	if !slices.ContainsFunc(Table, func(e Edge) bool { return e.Op == c.Op && slices.Contains(e.Actors, c.Actor) }) {
		return reject(ErrValidation, j, c.Op, "%s may not %s", c.Actor, c.Op)
	}
	if c.Actor == ActorOwner && c.LeaseID == "" {
		return reject(ErrValidation, j, c.Op, "lease_id is required: present the fencing token your claim returned")
	}
	switch c.Op {
	case OpClaim:
		if c.ActorID == "" || c.LeaseTTL <= 0 {
			return reject(ErrValidation, j, c.Op, "a claim needs a worker id and a positive lease TTL")
		}
	case OpHeartbeat:
		if c.LeaseTTL <= 0 {
			return reject(ErrValidation, j, c.Op, "a heartbeat needs a positive lease TTL")
		}
	case OpComplete:
		if len(c.Result) > MaxPayloadBytes {
			return reject(ErrValidation, j, c.Op, "result is %d bytes: the limit is %d; store it elsewhere and pass result_ptr", len(c.Result), MaxPayloadBytes)
		}
		if err := CheckJSON("result", c.Result); err != nil {
			return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
		}
	case OpStep, OpSuspend:
		if err := c.validateStep(j); err != nil {
			return err
		}
	case OpDeadLetter:
		if !slices.Contains(DLQReasons, c.ReasonCode) {
			return reject(ErrValidation, j, c.Op, "reason code %q: expected one of %v", c.ReasonCode, DLQReasons)
		}
	case OpCheckpoint:
		if len(c.Checkpoint) > MaxPayloadBytes {
			return reject(ErrValidation, j, c.Op, "checkpoint must be valid JSON of at most %d bytes", MaxPayloadBytes)
		}
		if err := CheckJSON("checkpoint", c.Checkpoint); err != nil {
			return reject(ErrValidation, j, c.Op, "checkpoint must be valid JSON of at most %d bytes: %s", MaxPayloadBytes, inputProblem(err))
		}
		if c.UsageDelta.Steps < 0 || c.UsageDelta.Cost < 0 {
			return reject(ErrValidation, j, c.Op, "usage deltas must not be negative")
		}
	}
	if err := CheckJSON("progress", c.Progress); err != nil {
		return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
	}
	if err := CheckTexts("actor id", c.ActorID, "request id", c.RequestID, "lease id", c.LeaseID,
		"reason code", c.ReasonCode, "result_ptr", c.ResultPtr, "phase", c.Phase); err != nil {
		return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
	}
	if c.RetryAt != nil {
		if err := CheckTime("retry_at", *c.RetryAt); err != nil {
			return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
		}
	}
	return nil
}

// cleaned returns c with its free text (reason, error code and message)
// made storable: a handler's failure is recorded, not refused, for the
// bytes of its message.
func (c Command) cleaned() Command {
	c.Reason = cleanText(c.Reason)
	if c.Error != nil {
		e := *c.Error
		e.Code, e.Message = cleanText(e.Code), cleanText(e.Message)
		c.Error = &e
	}
	return c
}

// already reports whether the result of cmd already holds: the idempotent
// repeat of a transition that was applied before.
func already(j Job, c Command) bool {
	switch c.Actor {
	case ActorOwner:
		if j.State.Leased() {
			return c.Op == OpStart && j.State == Running && j.LeaseID == c.LeaseID
		}
		// The lease ended: a no-op only if this owner ended it, with this op's result.
		if j.LastLeaseID != c.LeaseID || j.LeaseEndedBy != ActorOwner {
			return false
		}
		switch c.Op {
		case OpComplete, OpAckCancel, OpHalt, OpDeadLetter:
			return j.State == target1(c.Op)
		case OpFail:
			return slices.Contains([]State{Retrying, Failed, DeadLettered, TimedOut}, j.State) && j.Attempt > 0
		case OpStall:
			return j.State == Stalled
		case OpSuspend:
			return j.State == Scheduled && j.ReasonCode == ReasonSuspended
		}
	case ActorClient:
		switch c.Op {
		case OpCancel:
			return j.State == Cancelled || j.State == CancelRequested
		case OpCancelHard:
			return j.State == Cancelled
		}
	}
	return false
}

func target1(op Op) State {
	return targets(op)[0]
}

// fence rejects an owner command whose lease is not the job's live lease.
func fence(j Job, c Command, now time.Time) error {
	if !j.State.Leased() || j.LeaseID != c.LeaseID {
		return reject(ErrStaleLease, &j, c.Op, "lease %s is not the job's current lease (it was superseded, revoked or released); stop working on this job", c.LeaseID)
	}
	if j.LeaseExpiresAt != nil && !now.Before(*j.LeaseExpiresAt) {
		return reject(ErrStaleLease, &j, c.Op, "lease %s expired at %s; heartbeat more often than the lease TTL", c.LeaseID, j.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

func invalid(j Job, c Command) error {
	if j.State.Terminal() {
		return reject(ErrInvalidTransition, &j, c.Op, "the job is %s, which is terminal and never changes", j.State)
	}
	var from []State
	for _, e := range Table {
		if e.Op == c.Op && slices.Contains(e.Actors, c.Actor) && !slices.Contains(from, e.From) {
			from = append(from, e.From)
		}
	}
	return reject(ErrInvalidTransition, &j, c.Op, "%s by %s is allowed only from %v", c.Op, c.Actor, from)
}

// transition mutates next (a clone of the job) as cmd asks and returns the op,
// actor and event type of the table row it took; a checkpoint over budget,
// for example, becomes a system halt.
func transition(next *Job, c Command, now time.Time) (Op, Actor, EventType, error) {
	op, actor := c.Op, c.Actor
	switch op {
	case OpPromote:
		if next.RunAt.After(now) {
			return notYet(next, op, "run_at", next.RunAt)
		}
		next.State = Queued
		clearSuspended(next)
		return op, actor, EventPromoted, nil
	case OpUnblock:
		if next.RunAt.After(now) {
			return notYet(next, op, "run_at", next.RunAt)
		}
		next.State, next.RunAt = Queued, now
		return op, actor, EventUnblocked, nil
	case OpClaim:
		// A queued job is due by definition (promote and unblock wait for
		// run_at), so a claim does not look at run_at.
		if next.Failures >= next.MaxAttempts {
			return op, actor, "", reject(ErrInvalidTransition, next, op, "no attempts left (%d of %d failed)", next.Failures, next.MaxAttempts)
		}
		exp := later(now, c.LeaseTTL)
		next.State, next.Attempt = Claimed, next.Attempt+1
		next.Owner, next.LeaseID, next.LeaseExpiresAt = c.ActorID, c.LeaseID, &exp
		next.Phase, next.AttemptStartedAt = "", nil // this attempt has not started
		return op, actor, EventClaimed, nil
	case OpStart:
		next.State = Running
		if next.StartedAt == nil {
			next.StartedAt = &now
		}
		next.AttemptStartedAt = &now
		if next.Timeout > 0 {
			t := later(now, next.Timeout.D())
			next.TimeoutAt = &t
		}
		return op, actor, EventStarted, nil
	case OpHeartbeat:
		exp := later(now, c.LeaseTTL)
		next.LeaseExpiresAt = &exp
		report(next, c)
		return op, actor, EventHeartbeat, nil
	case OpCheckpoint:
		if c.Checkpoint != nil {
			next.Checkpoint = compactJSON(c.Checkpoint)
		}
		report(next, c)
		next.Usage.Steps += c.UsageDelta.Steps
		next.Usage.Cost += c.UsageDelta.Cost
		if over := overBudget(*next, now); over != "" {
			next.State, next.ReasonCode, next.Reason = Halted, ReasonBudget, over
			return OpHalt, ActorSystem, EventHalted, nil
		}
		return op, actor, EventCheckpointed, nil
	case OpComplete:
		next.State = Succeeded
		next.Result, next.ResultPtr = compactJSON(c.Result), c.ResultPtr
		if next.Result == nil && next.ResultPtr == "" {
			next.Result = json.RawMessage("null")
		}
		next.ExecutionMS = c.ExecutionMS
		return op, actor, EventSucceeded, nil
	case OpFail:
		e := jobError(c.Error, "error", "the handler failed without a message", next.Attempt)
		if e.Class == "" {
			e.Class = DefaultRetryRules.Classify(e.Code, ClassTransient)
		}
		next.ExecutionMS = c.ExecutionMS
		return op, actor, failTo(next, e, c, now), nil
	case OpHalt:
		next.State = Halted
		next.ReasonCode = firstNonEmpty(c.ReasonCode, "halted")
		next.Reason = firstNonEmpty(c.Reason, "halted by its handler")
		next.ExecutionMS = c.ExecutionMS
		return op, actor, EventHalted, nil
	case OpStall:
		if actor == ActorSystem && next.LeaseExpiresAt != nil && now.Before(*next.LeaseExpiresAt) {
			return notYet(next, op, "lease_expires_at", *next.LeaseExpiresAt)
		}
		next.State = Stalled
		next.ReasonCode = ReasonLeaseExpired
		if actor == ActorOwner {
			next.ReasonCode = ReasonReleased
		}
		next.Reason = firstNonEmpty(c.Reason, next.ReasonCode)
		return op, actor, EventStalled, nil
	case OpRequeue:
		// A release (the owner's graceful stop) used no retry: only failed
		// attempts count against max_attempts.
		if next.Failures < next.MaxAttempts {
			next.State, next.RunAt = Queued, now
			next.ReasonCode, next.Reason = "", ""
			return op, actor, EventRequeued, nil
		}
		code := ReasonExhaustedRetries
		if next.ReasonCode == ReasonLeaseExpired {
			code = ReasonLeaseExpired
		}
		if next.LastError == nil {
			next.LastError = &JobError{Code: code, Message: fmt.Sprintf("the lease of attempt %d was lost and no attempts are left", next.Attempt), Attempt: next.Attempt}
		}
		next.State, next.ReasonCode = DeadLettered, code
		next.Reason = fmt.Sprintf("no attempts left after %d failed", next.Failures)
		return op, actor, EventDeadLettered, nil
	case OpDeadLetter:
		next.State, next.ReasonCode = DeadLettered, c.ReasonCode
		next.LastError = jobError(c.Error, c.ReasonCode, firstNonEmpty(c.Reason, "dead-lettered"), next.Attempt)
		next.Reason = firstNonEmpty(c.Reason, next.LastError.Message)
		return op, actor, EventDeadLettered, nil
	case OpCancel:
		// The run engine cancels with its own code (upstream_failed, run_failed).
		next.ReasonCode, next.Reason = firstNonEmpty(c.ReasonCode, ReasonCancelled), firstNonEmpty(c.Reason, "cancelled by a client")
		if next.State.Leased() {
			grace := firstDuration(c.CancelGrace, next.CancelGrace.D(), DefaultCancelGrace)
			d := later(now, grace)
			next.State, next.CancelDeadline = CancelRequested, &d
			return op, actor, EventCancelRequested, nil
		}
		next.State = Cancelled
		return op, actor, EventCancelled, nil
	case OpCancelHard:
		next.State, next.ReasonCode = Cancelled, ReasonCancelled
		next.Reason = firstNonEmpty(c.Reason, "cancelled (hard) by a client")
		return op, actor, EventCancelled, nil
	case OpAckCancel:
		next.State = Cancelled
		next.ExecutionMS = c.ExecutionMS
		return op, actor, EventCancelled, nil
	case OpForceCancel:
		expired := next.LeaseExpiresAt != nil && !now.Before(*next.LeaseExpiresAt)
		if next.CancelDeadline != nil && now.Before(*next.CancelDeadline) && !expired {
			return notYet(next, op, "cancel_deadline", *next.CancelDeadline)
		}
		next.State, next.ReasonCode = Cancelled, ReasonCancelDeadline
		next.Reason = "the owner did not acknowledge the cancel before its deadline"
		return op, actor, EventCancelled, nil
	case OpStep, OpSuspend, OpWake:
		return stepTransition(next, c, now)
	case OpTimeOut:
		if c.Deadline {
			if next.Deadline == nil || now.Before(*next.Deadline) {
				return op, actor, "", reject(ErrInvalidTransition, next, op, "the job's deadline has not passed")
			}
			next.State, next.ReasonCode = TimedOut, ReasonDeadline
			next.Error = &JobError{Code: ReasonDeadline, Message: "the job's deadline passed", Class: ClassTimeout, Attempt: next.Attempt}
			next.Reason = next.Error.Message
			return op, actor, EventTimedOut, nil
		}
		if next.State != Running || next.TimeoutAt == nil || now.Before(*next.TimeoutAt) {
			return op, actor, "", reject(ErrInvalidTransition, next, op, "the attempt has not run past its timeout")
		}
		e := &JobError{Code: ReasonTimeout, Message: fmt.Sprintf("attempt %d ran past its timeout of %s", next.Attempt, next.Timeout.D()), Class: ClassTimeout, Attempt: next.Attempt}
		return op, actor, failTo(next, e, c, now), nil
	}
	return op, actor, "", reject(ErrValidation, next, op, "unknown operation")
}

// failTo moves a failing job to retrying, failed, timed_out or dead_lettered.
func failTo(next *Job, e *JobError, c Command, now time.Time) EventType {
	next.LastError = e
	switch {
	case e.Class == ClassPermanent || next.State == CancelRequested:
		next.State, next.Error = Failed, e
		return EventFailed
	case next.Failures < next.MaxAttempts:
		at := later(now, c.Backoff.OrDefault().Delay(next.ID, next.Failures))
		if c.RetryAt != nil && c.RetryAt.After(now) {
			at = *c.RetryAt
		}
		next.State, next.RunAt = Retrying, at
		return EventRetryScheduled
	case e.Class == ClassTimeout:
		te := *e
		if te.Code != ReasonTimeout && te.Code != ReasonDeadline {
			te.Code, te.Message = ReasonTimeout, te.Code+": "+te.Message
		}
		next.State, next.Error = TimedOut, &te
		next.ReasonCode, next.Reason = ReasonTimeout, e.Message
		return EventTimedOut
	case next.OnExhausted == Failed:
		next.State, next.Error = Failed, e
		return EventFailed
	default:
		next.State, next.ReasonCode = DeadLettered, ReasonExhaustedRetries
		next.Reason = fmt.Sprintf("no attempts left after %d failed: %s", next.Failures, e.Message)
		return EventDeadLettered
	}
}

// settle clears or records the fields whose presence the new state dictates.
func settle(next *Job, prev Job, actor Actor, now time.Time) {
	if prev.State.Leased() && !next.State.Leased() {
		// The attempt ended: it ran from its start (if it started) to now.
		next.Usage.RuntimeMS += attemptRuntime(prev, now).Milliseconds()
		next.LastOwner, next.LastLeaseID, next.LeaseEndedBy = prev.Owner, prev.LeaseID, actor
		next.LastLeaseExpiresAt = prev.LeaseExpiresAt
		next.Owner, next.LeaseID, next.LeaseExpiresAt, next.TimeoutAt = "", "", nil, nil
	}
	if next.State != CancelRequested {
		next.CancelDeadline = nil
	}
	if next.State.Terminal() {
		next.FinishedAt = &now
		next.ResultDigest = ResultDigest(next.Result, next.ResultPtr)
	}
}

// attemptRuntime is how long j's current attempt has run at now: zero
// unless it holds a lease and has started. Queue time and backoff between
// attempts never count.
func attemptRuntime(j Job, now time.Time) time.Duration {
	if !j.State.Leased() || j.AttemptStartedAt == nil || now.Before(*j.AttemptStartedAt) {
		return 0
	}
	return now.Sub(*j.AttemptStartedAt)
}

// runtime is the time j's attempts have run, the current one up to now.
func runtime(j Job, now time.Time) time.Duration {
	return time.Duration(j.Usage.RuntimeMS)*time.Millisecond + attemptRuntime(j, now)
}

func report(next *Job, c Command) {
	if c.Progress != nil {
		next.Progress = compactJSON(c.Progress)
	}
	if c.Phase != "" {
		next.Phase = c.Phase
	}
}

// overBudget names the budget limit the job has passed, or returns "".
func overBudget(j Job, now time.Time) string {
	b := j.Budget
	if b == nil {
		return ""
	}
	switch {
	case b.MaxSteps > 0 && j.Usage.Steps > b.MaxSteps:
		return fmt.Sprintf("step budget exceeded: %d of %d", j.Usage.Steps, b.MaxSteps)
	case b.MaxCost > 0 && j.Usage.Cost > b.MaxCost:
		return fmt.Sprintf("cost budget exceeded: %d of %d", j.Usage.Cost, b.MaxCost)
	case b.MaxRuntime > 0 && runtime(j, now) > b.MaxRuntime.D():
		return fmt.Sprintf("runtime budget exceeded: %s", b.MaxRuntime.D())
	}
	return ""
}

// OverBudget reports whether j has passed a limit of its budget at now, and
// which. The timeouts service uses it to halt a running job on its runtime budget.
func OverBudget(j Job, now time.Time) (string, bool) {
	r := overBudget(j, now)
	return r, r != ""
}

func notYet(j *Job, op Op, field string, at time.Time) (Op, Actor, EventType, error) {
	return op, "", "", reject(ErrInvalidTransition, j, op, "not yet: %s is %s", field, at.Format(time.RFC3339Nano))
}

func jobError(e *JobError, code, msg string, attempt int) *JobError {
	out := JobError{Code: code, Message: msg}
	if e != nil {
		out = *e
	}
	if out.Code == "" {
		out.Code = code
	}
	if out.Message == "" {
		out.Message = msg
	}
	out.Attempt = attempt
	return &out
}

func errorDetails(j Job) json.RawMessage {
	e := j.LastError
	if j.Error != nil {
		e = j.Error
	}
	if e == nil {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"error": e, "run_at": j.RunAt})
	return b
}

// stamp records on ev the times the transition set, so Verify can check the
// row's columns against the log: run_at wherever it changed (or was set
// anew), the lease expiry wherever the job stays leased, and the deadline of
// a soft cancel whose grace was not the job's.
func stamp(ev *Event, prev, next Job, c Command) {
	switch {
	case ev.Type == EventRetryScheduled || ev.Type == EventRequeued || ev.Type == EventUnblocked,
		!next.RunAt.Equal(prev.RunAt):
		t := next.RunAt
		ev.RunAt = &t
	}
	if next.State.Leased() && next.LeaseExpiresAt != nil {
		t := *next.LeaseExpiresAt
		ev.LeaseExpiresAt = &t
	}
	if ev.Type == EventCancelRequested && c.CancelGrace > 0 && c.CancelGrace != prev.CancelGrace.D() {
		ev.Details, _ = json.Marshal(cancelDetails{CancelDeadline: next.CancelDeadline})
	}
}

func newEvent(j Job, from State, op Op, actor Actor, actorID, requestID, leaseID string, now time.Time) Event {
	return Event{
		JobID: j.ID, RunID: j.RunID, Op: op, FromState: from, ToState: j.State, At: now,
		Actor: actor, ActorID: actorID, RequestID: requestID, CorrelationID: j.CorrelationID,
		TraceID: j.TraceID, Attempt: j.Attempt, Rev: j.Rev, LeaseID: leaseID, Version: EventVersion,
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func firstDuration(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// later returns now+d kept to the microsecond, the precision the stores keep,
// so a time read back from a column equals the one computed here.
func later(now time.Time, d time.Duration) time.Time {
	return now.Add(d).Truncate(time.Microsecond)
}
