package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// The row layout: how a lifecycle.Job and a lifecycle.Event map to the typed
// columns of jobs and job_events (migration 0003). Rows are scanned straight
// into the records; only env and depends_on, small and rarely set, go
// through JSON.

// jobImmutable are the columns written once, at enqueue.
const jobImmutable = `id, tenant, kind, queue, topic, priority, payload, context_ptr, adapter_id, env, dedupe_key,
    max_attempts, on_exhausted, timeout, deadline, cancel_grace, budget_max_runtime, budget_max_steps,
    budget_max_cost, correlation_id, trace_id, parent_job_id, run_id, step_index, replay_of, depends_on, created_at`

// jobMutable are the columns transitions write, in the order of mutableArgs.
const jobMutable = `state, attempt, failures, rev, run_at, owner, lease_id, lease_expires_at, timeout_at,
    cancel_deadline, lease_ended_by, last_owner, last_lease_id, last_lease_expires_at, checkpoint, progress,
    phase, usage_steps, usage_cost, usage_runtime_ms, result, result_ptr, result_digest, error_code,
    error_message, error_class, error_attempt, last_error_code, last_error_message, last_error_class,
    last_error_attempt, reason_code, reason, execution_ms, updated_at, started_at, attempt_started_at,
    finished_at`

// jobColumns is every column of a job row, in the order of scanJob.
const jobColumns = jobImmutable + ",\n    " + jobMutable

// immutableArgs returns the values of jobImmutable for j.
func immutableArgs(j *lifecycle.Job) ([]any, error) {
	env, err := jsonOrNil(j.Env != nil, j.Env)
	if err != nil {
		return nil, err
	}
	deps, err := jsonOrNil(j.DependsOn != nil, j.DependsOn)
	if err != nil {
		return nil, err
	}
	var bRuntime, bSteps, bCost any
	if b := j.Budget; b != nil {
		bRuntime, bSteps, bCost = int64(b.MaxRuntime), b.MaxSteps, b.MaxCost
	}
	return []any{j.ID, j.Tenant, j.Kind, j.Queue, j.Topic, j.Priority, rawText(j.Payload), j.ContextPtr,
		j.AdapterID, env, j.DedupeKey, j.MaxAttempts, string(j.OnExhausted), int64(j.Timeout), microsPtr(j.Deadline),
		int64(j.CancelGrace), bRuntime, bSteps, bCost, j.CorrelationID, j.TraceID, j.ParentJobID, j.RunID,
		j.StepIndex, j.ReplayOf, deps, micros(j.CreatedAt)}, nil
}

// mutableArgs returns the values of jobMutable for j.
func mutableArgs(j *lifecycle.Job) []any {
	ec, em, ecl, ea := errArgs(j.Error)
	lc, lm, lcl, la := errArgs(j.LastError)
	return []any{string(j.State), j.Attempt, j.Failures, j.Rev, micros(j.RunAt), j.Owner, j.LeaseID,
		microsPtr(j.LeaseExpiresAt), microsPtr(j.TimeoutAt), microsPtr(j.CancelDeadline), string(j.LeaseEndedBy),
		j.LastOwner, j.LastLeaseID, microsPtr(j.LastLeaseExpiresAt), rawText(j.Checkpoint), rawText(j.Progress),
		j.Phase, j.Usage.Steps, j.Usage.Cost, j.Usage.RuntimeMS, rawText(j.Result), j.ResultPtr, j.ResultDigest,
		ec, em, ecl, ea, lc, lm, lcl, la, j.ReasonCode, j.Reason, j.ExecutionMS, micros(j.UpdatedAt),
		microsPtr(j.StartedAt), microsPtr(j.AttemptStartedAt), microsPtr(j.FinishedAt)}
}

func errArgs(e *lifecycle.JobError) (code, msg, class, attempt any) {
	if e == nil {
		return nil, nil, nil, nil
	}
	return e.Code, e.Message, string(e.Class), e.Attempt
}

// jobScanner scans job rows (jobColumns) into lifecycle.Job values, reusing
// its destinations from row to row.
type jobScanner struct {
	j                                               lifecycle.Job
	env, deps                                       []byte
	onExhausted, state, leaseEndedBy                string
	timeout, cancelGrace, createdAt, runAt, updated int64
	deadline, leaseExp, timeoutAt, cancelDeadline   sql.NullInt64
	lastLeaseExp, started, attemptStarted, finished sql.NullInt64
	bRuntime, bSteps, bCost                         sql.NullInt64
	errCode, errMsg, errClass, lastCode, lastMsg    sql.NullString
	lastClass                                       sql.NullString
	errAttempt, lastAttempt                         sql.NullInt64
	dest                                            []any
}

func newJobScanner() *jobScanner {
	s := &jobScanner{}
	j := &s.j
	s.dest = []any{&j.ID, &j.Tenant, &j.Kind, &j.Queue, &j.Topic, &j.Priority, (*[]byte)(&j.Payload), &j.ContextPtr,
		&j.AdapterID, &s.env, &j.DedupeKey, &j.MaxAttempts, &s.onExhausted, &s.timeout, &s.deadline,
		&s.cancelGrace, &s.bRuntime, &s.bSteps, &s.bCost, &j.CorrelationID, &j.TraceID, &j.ParentJobID, &j.RunID,
		&j.StepIndex, &j.ReplayOf, &s.deps, &s.createdAt,
		&s.state, &j.Attempt, &j.Failures, &j.Rev, &s.runAt, &j.Owner, &j.LeaseID, &s.leaseExp, &s.timeoutAt,
		&s.cancelDeadline, &s.leaseEndedBy, &j.LastOwner, &j.LastLeaseID, &s.lastLeaseExp,
		(*[]byte)(&j.Checkpoint), (*[]byte)(&j.Progress), &j.Phase, &j.Usage.Steps, &j.Usage.Cost,
		&j.Usage.RuntimeMS, (*[]byte)(&j.Result), &j.ResultPtr, &j.ResultDigest, &s.errCode, &s.errMsg,
		&s.errClass, &s.errAttempt, &s.lastCode, &s.lastMsg, &s.lastClass, &s.lastAttempt, &j.ReasonCode,
		&j.Reason, &j.ExecutionMS, &s.updated, &s.started, &s.attemptStarted, &s.finished}
	return s
}

// scan reads the current row into a new Job.
func (s *jobScanner) scan(rows *sql.Rows) (lifecycle.Job, error) {
	s.j = lifecycle.Job{}
	s.env, s.deps = nil, nil
	if err := rows.Scan(s.dest...); err != nil {
		return lifecycle.Job{}, err
	}
	j := s.j
	if s.env != nil {
		if err := json.Unmarshal(s.env, &j.Env); err != nil {
			return j, fmt.Errorf("sqlite: job %s: env column holds unreadable JSON: %w", j.ID, err)
		}
	}
	if s.deps != nil {
		if err := json.Unmarshal(s.deps, &j.DependsOn); err != nil {
			return j, fmt.Errorf("sqlite: job %s: depends_on column holds unreadable JSON: %w", j.ID, err)
		}
	}
	j.OnExhausted, j.State, j.LeaseEndedBy = lifecycle.State(s.onExhausted), lifecycle.State(s.state), lifecycle.Actor(s.leaseEndedBy)
	j.Timeout, j.CancelGrace = lifecycle.Duration(s.timeout), lifecycle.Duration(s.cancelGrace)
	j.CreatedAt, j.RunAt, j.UpdatedAt = fromMicros(s.createdAt), fromMicros(s.runAt), fromMicros(s.updated)
	j.Deadline, j.LeaseExpiresAt, j.TimeoutAt = timePtr(s.deadline), timePtr(s.leaseExp), timePtr(s.timeoutAt)
	j.CancelDeadline, j.LastLeaseExpiresAt = timePtr(s.cancelDeadline), timePtr(s.lastLeaseExp)
	j.StartedAt, j.AttemptStartedAt, j.FinishedAt = timePtr(s.started), timePtr(s.attemptStarted), timePtr(s.finished)
	if s.bRuntime.Valid || s.bSteps.Valid || s.bCost.Valid {
		j.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(s.bRuntime.Int64), MaxSteps: s.bSteps.Int64, MaxCost: s.bCost.Int64}
	}
	if s.errCode.Valid {
		j.Error = &lifecycle.JobError{Code: s.errCode.String, Message: s.errMsg.String,
			Class: lifecycle.ErrorClass(s.errClass.String), Attempt: int(s.errAttempt.Int64)}
	}
	if s.lastCode.Valid {
		j.LastError = &lifecycle.JobError{Code: s.lastCode.String, Message: s.lastMsg.String,
			Class: lifecycle.ErrorClass(s.lastClass.String), Attempt: int(s.lastAttempt.Int64)}
	}
	return j, nil
}

// eventColumns are the stored columns of an event, in the order of
// eventArgs; reads add the job's run_id, correlation_id and trace_id, which
// the event row does not repeat.
const eventColumns = `job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id, attempt,
    lease_id, reason, details, run_at, lease_expires_at, spec_digest`

// eventSelect reads events (aliased e) with their job's ids (aliased j).
const eventSelect = `SELECT e.id, e.job_id, e.rev, e.type, e.op, e.from_state, e.to_state, e.at, e.actor,
    e.actor_id, e.request_id, e.attempt, e.lease_id, e.reason, e.details, e.run_at, e.lease_expires_at,
    e.spec_digest, coalesce(j.run_id, ''), coalesce(j.correlation_id, ''), coalesce(j.trace_id, '')
    FROM job_events e LEFT JOIN jobs j ON j.id = e.job_id`

func eventArgs(e *lifecycle.Event) []any {
	return []any{e.JobID, e.Rev, string(e.Type), string(e.Op), string(e.FromState), string(e.ToState), micros(e.At),
		string(e.Actor), e.ActorID, e.RequestID, e.Attempt, e.LeaseID, e.Reason, rawText(e.Details),
		microsPtr(e.RunAt), microsPtr(e.LeaseExpiresAt), e.SpecDigest}
}

// eventScanner scans rows of eventSelect.
type eventScanner struct {
	e                        lifecycle.Event
	typ, op, from, to, actor string
	at                       int64
	runAt, leaseExp          sql.NullInt64
	dest                     []any
}

func newEventScanner() *eventScanner {
	s := &eventScanner{}
	e := &s.e
	s.dest = []any{&e.ID, &e.JobID, &e.Rev, &s.typ, &s.op, &s.from, &s.to, &s.at, &s.actor, &e.ActorID,
		&e.RequestID, &e.Attempt, &e.LeaseID, &e.Reason, (*[]byte)(&e.Details), &s.runAt, &s.leaseExp,
		&e.SpecDigest, &e.RunID, &e.CorrelationID, &e.TraceID}
	return s
}

func (s *eventScanner) scan(rows *sql.Rows) (lifecycle.Event, error) {
	s.e = lifecycle.Event{}
	if err := rows.Scan(s.dest...); err != nil {
		return lifecycle.Event{}, err
	}
	e := s.e
	e.Type, e.Op = lifecycle.EventType(s.typ), lifecycle.Op(s.op)
	e.FromState, e.ToState, e.Actor = lifecycle.State(s.from), lifecycle.State(s.to), lifecycle.Actor(s.actor)
	e.At = fromMicros(s.at)
	e.RunAt, e.LeaseExpiresAt = timePtr(s.runAt), timePtr(s.leaseExp)
	e.Version = lifecycle.EventVersion
	return e, nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// rawText stores JSON bytes as TEXT, and nil as NULL.
func rawText(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return string(r)
}

// jsonOrNil encodes v as JSON text when present, else NULL.
func jsonOrNil(present bool, v any) (any, error) {
	if !present {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
