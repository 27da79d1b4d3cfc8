package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stint-dev/stint/lifecycle"
)

// The columns of jobs and job_events as the driver reads them, in the order
// scanJob and scanEvent expect. Every field of a job has a column of its own
// (see migrations/0003_layout.sql); no record travels as JSON.
const (
	jobSelect = `j.id, j.tenant, j.kind, j.queue, j.topic, j.priority, j.payload, j.context_ptr, j.adapter_id, j.env,
j.dedupe_key, j.max_attempts, j.on_exhausted, j.timeout, j.deadline, j.cancel_grace, j.budget_max_runtime,
j.budget_max_steps, j.budget_max_cost, j.correlation_id, j.trace_id, j.parent_job_id, j.run_id, j.step_index,
j.replay_of, j.depends_on, j.created_at, j.state, j.attempt, j.failures, j.rev, j.run_at, j.owner, j.lease_id,
j.lease_expires_at, j.timeout_at, j.cancel_deadline, j.lease_ended_by, j.last_owner, j.last_lease_id,
j.last_lease_expires_at, j.checkpoint, j.progress, j.phase, j.usage_steps, j.usage_cost, j.usage_runtime_ms,
j.result, j.result_ptr, j.result_digest, j.error_code, j.error_message, j.error_class, j.error_attempt,
j.last_error_code, j.last_error_message, j.last_error_class, j.last_error_attempt, j.reason_code, j.reason,
j.execution_ms, j.updated_at, j.started_at, j.attempt_started_at, j.finished_at`

	// run_id, correlation_id and trace_id come from the job's row.
	eventSelect = `e.id, e.job_id, j.run_id, e.type, e.op, e.from_state, e.to_state, e.at, e.actor, e.actor_id,
e.request_id, j.correlation_id, j.trace_id, e.attempt, e.rev, e.lease_id, e.reason, e.details, e.run_at,
e.lease_expires_at, e.spec_digest`
)

// scanJob reads one row of jobSelect.
func scanJob(r pgx.CollectableRow) (lifecycle.Job, error) {
	var j lifecycle.Job
	err := scanJobInto(r, &j)
	return j, err
}

// scanJobInto reads a row of jobSelect followed by the columns of extra.
func scanJobInto(r pgx.CollectableRow, jp *lifecycle.Job, extra ...any) error {
	var (
		j                                     = jp
		payload, env, checkpoint, progress    *string
		result                                *string
		timeout, cancelGrace                  int64
		budgetRuntime, budgetSteps, budgetCst *int64
		errCode, lastErrCode                  *string
		errMsg, errClass                      string
		lastErrMsg, lastErrClass              string
		errAttempt, lastErrAttempt            int
	)
	dest := []any{&j.ID, &j.Tenant, &j.Kind, &j.Queue, &j.Topic, &j.Priority, &payload, &j.ContextPtr, &j.AdapterID, &env,
		&j.DedupeKey, &j.MaxAttempts, &j.OnExhausted, &timeout, &j.Deadline, &cancelGrace, &budgetRuntime,
		&budgetSteps, &budgetCst, &j.CorrelationID, &j.TraceID, &j.ParentJobID, &j.RunID, &j.StepIndex,
		&j.ReplayOf, &j.DependsOn, &j.CreatedAt, &j.State, &j.Attempt, &j.Failures, &j.Rev, &j.RunAt, &j.Owner, &j.LeaseID,
		&j.LeaseExpiresAt, &j.TimeoutAt, &j.CancelDeadline, &j.LeaseEndedBy, &j.LastOwner, &j.LastLeaseID,
		&j.LastLeaseExpiresAt, &checkpoint, &progress, &j.Phase, &j.Usage.Steps, &j.Usage.Cost, &j.Usage.RuntimeMS,
		&result, &j.ResultPtr, &j.ResultDigest, &errCode, &errMsg, &errClass, &errAttempt,
		&lastErrCode, &lastErrMsg, &lastErrClass, &lastErrAttempt, &j.ReasonCode, &j.Reason,
		&j.ExecutionMS, &j.UpdatedAt, &j.StartedAt, &j.AttemptStartedAt, &j.FinishedAt}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return err
	}
	j.Payload, j.Checkpoint, j.Progress, j.Result = raw(payload), raw(checkpoint), raw(progress), raw(result)
	if env != nil {
		if err := json.Unmarshal([]byte(*env), &j.Env); err != nil {
			return fmt.Errorf("job %s: env column: %w", j.ID, err)
		}
	}
	j.Timeout, j.CancelGrace = lifecycle.Duration(timeout), lifecycle.Duration(cancelGrace)
	if budgetRuntime != nil || budgetSteps != nil || budgetCst != nil {
		j.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(deref(budgetRuntime)), MaxSteps: deref(budgetSteps), MaxCost: deref(budgetCst)}
	}
	if errCode != nil {
		j.Error = &lifecycle.JobError{Code: *errCode, Message: errMsg, Class: lifecycle.ErrorClass(errClass), Attempt: errAttempt}
	}
	if lastErrCode != nil {
		j.LastError = &lifecycle.JobError{Code: *lastErrCode, Message: lastErrMsg, Class: lifecycle.ErrorClass(lastErrClass), Attempt: lastErrAttempt}
	}
	j.CreatedAt, j.RunAt, j.UpdatedAt = j.CreatedAt.UTC(), j.RunAt.UTC(), j.UpdatedAt.UTC()
	for _, t := range []**time.Time{&j.Deadline, &j.LeaseExpiresAt, &j.TimeoutAt, &j.CancelDeadline,
		&j.LastLeaseExpiresAt, &j.StartedAt, &j.AttemptStartedAt, &j.FinishedAt} {
		utc(t)
	}
	return nil
}

// scanEvent reads one row of eventSelect.
func scanEvent(r pgx.CollectableRow) (lifecycle.Event, error) {
	var (
		e       lifecycle.Event
		details *string
	)
	err := r.Scan(&e.ID, &e.JobID, &e.RunID, &e.Type, &e.Op, &e.FromState, &e.ToState, &e.At, &e.Actor, &e.ActorID,
		&e.RequestID, &e.CorrelationID, &e.TraceID, &e.Attempt, &e.Rev, &e.LeaseID, &e.Reason, &details, &e.RunAt,
		&e.LeaseExpiresAt, &e.SpecDigest)
	if err != nil {
		return e, err
	}
	e.Details, e.Version, e.At = raw(details), lifecycle.EventVersion, e.At.UTC()
	utc(&e.RunAt)
	utc(&e.LeaseExpiresAt)
	return e, nil
}

func raw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func utc(t **time.Time) {
	if *t != nil {
		u := (*t).UTC()
		*t = &u
	}
}

// jobInsertArgs lays new jobs out as one array per column, the parameters
// of qJobInsert.
func jobInsertArgs(jobs []lifecycle.Job) ([]any, error) {
	n := len(jobs)
	var (
		id, tenant, kind, queue, topic, contextPtr, adapterID, dedupeKey  = strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n)
		onExhausted, correlationID, traceID, parentJobID, runID, replayOf = strs(n), strs(n), strs(n), strs(n), strs(n), strs(n)
		payload, env, dependsOn                                           = texts(n), texts(n), texts(n)
		priority, maxAttempts, stepIndex                                  = make([]int32, n), make([]int32, n), make([]int32, n)
		timeout, cancelGrace                                              = make([]int64, n), make([]int64, n)
		budgetRuntime, budgetSteps, budgetCost                            = make([]pgtype.Int8, n), make([]pgtype.Int8, n), make([]pgtype.Int8, n)
		deadline                                                          = make([]pgtype.Timestamptz, n)
		createdAt                                                         = make([]time.Time, n)
	)
	for i, j := range jobs {
		id[i], tenant[i], kind[i], queue[i], topic[i] = j.ID, j.Tenant, j.Kind, j.Queue, j.Topic
		contextPtr[i], adapterID[i], dedupeKey[i] = j.ContextPtr, j.AdapterID, j.DedupeKey
		onExhausted[i], correlationID[i], traceID[i] = string(j.OnExhausted), j.CorrelationID, j.TraceID
		parentJobID[i], runID[i], replayOf[i] = j.ParentJobID, j.RunID, j.ReplayOf
		payload[i] = rawText(j.Payload)
		if j.Env != nil {
			b, err := json.Marshal(j.Env)
			if err != nil {
				return nil, fmt.Errorf("postgres: encode env of job %s: %w", j.ID, err)
			}
			env[i] = pgtype.Text{String: string(b), Valid: true}
		}
		if j.DependsOn != nil {
			b, err := json.Marshal(j.DependsOn)
			if err != nil {
				return nil, fmt.Errorf("postgres: encode depends_on of job %s: %w", j.ID, err)
			}
			dependsOn[i] = pgtype.Text{String: string(b), Valid: true}
		}
		priority[i], maxAttempts[i], stepIndex[i] = int32(j.Priority), int32(j.MaxAttempts), int32(j.StepIndex)
		timeout[i], cancelGrace[i] = int64(j.Timeout), int64(j.CancelGrace)
		if b := j.Budget; b != nil {
			budgetRuntime[i] = pgtype.Int8{Int64: int64(b.MaxRuntime), Valid: true}
			budgetSteps[i] = pgtype.Int8{Int64: b.MaxSteps, Valid: true}
			budgetCost[i] = pgtype.Int8{Int64: b.MaxCost, Valid: true}
		}
		deadline[i], createdAt[i] = timestamptz(j.Deadline), j.CreatedAt
	}
	m := mutableArgsOf(jobs)
	return append([]any{id, tenant, kind, queue, topic, priority, payload, contextPtr, adapterID, env, dedupeKey,
		maxAttempts, onExhausted, timeout, deadline, cancelGrace, budgetRuntime, budgetSteps, budgetCost,
		correlationID, traceID, parentJobID, runID, stepIndex, replayOf, dependsOn, createdAt}, m...), nil
}

// mutableArgsOf lays out the columns a transition may change, one array
// per column, in the order of mutableColumns.
func mutableArgsOf(jobs []lifecycle.Job) []any {
	n := len(jobs)
	var (
		state, owner, leaseID, leaseEndedBy, lastOwner, lastLeaseID, phase = strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n)
		resultPtr, resultDigest, reasonCode, reason                        = strs(n), strs(n), strs(n), strs(n)
		errMsg, errClass, lastErrMsg, lastErrClass                         = strs(n), strs(n), strs(n), strs(n)
		checkpoint, progress, result, errCode, lastErrCode                 = texts(n), texts(n), texts(n), texts(n), texts(n)
		attempt, failures, errAttempt, lastErrAttempt                      = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		rev, usageSteps, usageCost, usageRuntime, executionMS              = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		runAt, updatedAt                                                   = make([]time.Time, n), make([]time.Time, n)
		leaseExpiresAt, timeoutAt, cancelDeadline, lastLeaseExpiresAt      = tstz(n), tstz(n), tstz(n), tstz(n)
		startedAt, attemptStartedAt, finishedAt                            = tstz(n), tstz(n), tstz(n)
	)
	for i, j := range jobs {
		state[i], owner[i], leaseID[i], leaseEndedBy[i] = string(j.State), j.Owner, j.LeaseID, string(j.LeaseEndedBy)
		lastOwner[i], lastLeaseID[i], phase[i] = j.LastOwner, j.LastLeaseID, j.Phase
		resultPtr[i], resultDigest[i], reasonCode[i], reason[i] = j.ResultPtr, j.ResultDigest, j.ReasonCode, j.Reason
		checkpoint[i], progress[i], result[i] = rawText(j.Checkpoint), rawText(j.Progress), rawText(j.Result)
		if e := j.Error; e != nil {
			errCode[i] = pgtype.Text{String: e.Code, Valid: true}
			errMsg[i], errClass[i], errAttempt[i] = e.Message, string(e.Class), int32(e.Attempt)
		}
		if e := j.LastError; e != nil {
			lastErrCode[i] = pgtype.Text{String: e.Code, Valid: true}
			lastErrMsg[i], lastErrClass[i], lastErrAttempt[i] = e.Message, string(e.Class), int32(e.Attempt)
		}
		attempt[i], failures[i], rev[i] = int32(j.Attempt), int32(j.Failures), j.Rev
		usageSteps[i], usageCost[i], usageRuntime[i], executionMS[i] = j.Usage.Steps, j.Usage.Cost, j.Usage.RuntimeMS, j.ExecutionMS
		runAt[i], updatedAt[i] = j.RunAt, j.UpdatedAt
		leaseExpiresAt[i], timeoutAt[i] = timestamptz(j.LeaseExpiresAt), timestamptz(j.TimeoutAt)
		cancelDeadline[i], lastLeaseExpiresAt[i] = timestamptz(j.CancelDeadline), timestamptz(j.LastLeaseExpiresAt)
		startedAt[i], attemptStartedAt[i], finishedAt[i] = timestamptz(j.StartedAt), timestamptz(j.AttemptStartedAt), timestamptz(j.FinishedAt)
	}
	a := []any{state, attempt, failures, rev, runAt, owner, leaseID, leaseExpiresAt, timeoutAt, cancelDeadline,
		leaseEndedBy, lastOwner, lastLeaseID, lastLeaseExpiresAt, checkpoint, progress, phase,
		usageSteps, usageCost, usageRuntime, result, resultPtr, resultDigest,
		errCode, errMsg, errClass, errAttempt, lastErrCode, lastErrMsg, lastErrClass, lastErrAttempt,
		reasonCode, reason, executionMS, updatedAt, startedAt, attemptStartedAt, finishedAt}
	return a
}

// jobUpdateArgs are the parameters of jobUpdateSQL(mask): the mutable
// columns in mask, then the ids and the revs the rows must still have, then
// how many rows.
func jobUpdateArgs(jobs []lifecycle.Job, prevRev []int64, mask uint64) []any {
	all := mutableArgsOf(jobs)
	a := make([]any, 0, len(all)+3)
	for i, arr := range all {
		if mask&(1<<i) != 0 {
			a = append(a, arr)
		}
	}
	ids := strs(len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return append(a, ids, prevRev, len(jobs))
}

// eventInsertArgs lays events out as one array per column, the parameters
// of qEventInsert.
func eventInsertArgs(events []lifecycle.Event) []any {
	n := len(events)
	var (
		jobID, typ, op, from, to, actor, actorID, requestID, leaseID, reason, specDigest = strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n), strs(n)
		rev                                                                              = make([]int64, n)
		attempt                                                                          = make([]int32, n)
		at                                                                               = make([]time.Time, n)
		details                                                                          = texts(n)
		runAt, leaseExpiresAt                                                            = tstz(n), tstz(n)
	)
	for i, e := range events {
		jobID[i], typ[i], op[i], from[i], to[i] = e.JobID, string(e.Type), string(e.Op), string(e.FromState), string(e.ToState)
		actor[i], actorID[i], requestID[i], leaseID[i], reason[i] = string(e.Actor), e.ActorID, e.RequestID, e.LeaseID, e.Reason
		specDigest[i], rev[i], attempt[i], at[i] = e.SpecDigest, e.Rev, int32(e.Attempt), e.At
		details[i] = rawText(e.Details)
		runAt[i], leaseExpiresAt[i] = timestamptz(e.RunAt), timestamptz(e.LeaseExpiresAt)
	}
	return []any{jobID, rev, typ, op, from, to, at, actor, actorID, requestID, attempt, leaseID, reason, details,
		runAt, leaseExpiresAt, specDigest}
}

func strs(n int) []string             { return make([]string, n) }
func texts(n int) []pgtype.Text       { return make([]pgtype.Text, n) }
func tstz(n int) []pgtype.Timestamptz { return make([]pgtype.Timestamptz, n) }
func rawText(b json.RawMessage) pgtype.Text {
	if b == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: string(b), Valid: true}
}

func timestamptz(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: *t, Valid: true}
}
