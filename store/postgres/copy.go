package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stint-dev/stint/lifecycle"
)

// copyMinJobs is the smallest batch of new jobs JobInsert writes with COPY
// rather than INSERT ... SELECT FROM unnest: below it the COPY's own round
// trip costs more than it saves. See BenchmarkStore/EnqueueMany.
const copyMinJobs = 200

// copyColumns are the columns of a job row in COPY order.
var copyColumns = func() []string {
	var names []string
	for _, c := range append(append([]column(nil), immutableColumns...), mutableColumns...) {
		names = append(names, c.name)
	}
	return names
}()

// copyJobs writes new jobs with COPY, after sending what is pending.
func (t *tx) copyJobs(ctx context.Context, jobs []lifecycle.Job) error {
	if err := t.send(ctx); err != nil {
		return err
	}
	_, err := t.conn.CopyFrom(ctx, pgx.Identifier{"jobs"}, copyColumns, pgx.CopyFromSlice(len(jobs), func(i int) ([]any, error) {
		return jobRow(jobs[i])
	}))
	if err != nil {
		return fmt.Errorf("postgres: copy %d jobs: %w", len(jobs), err)
	}
	return nil
}

// jobRow is one job's values in copyColumns order.
func jobRow(j lifecycle.Job) ([]any, error) {
	var env pgtype.Text
	if j.Env != nil {
		b, err := json.Marshal(j.Env)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode env of job %s: %w", j.ID, err)
		}
		env = pgtype.Text{String: string(b), Valid: true}
	}
	var budgetRuntime, budgetSteps, budgetCost pgtype.Int8
	if b := j.Budget; b != nil {
		budgetRuntime = pgtype.Int8{Int64: int64(b.MaxRuntime), Valid: true}
		budgetSteps = pgtype.Int8{Int64: b.MaxSteps, Valid: true}
		budgetCost = pgtype.Int8{Int64: b.MaxCost, Valid: true}
	}
	var errCode, lastErrCode pgtype.Text
	var errMsg, errClass, lastErrMsg, lastErrClass string
	var errAttempt, lastErrAttempt int32
	if e := j.Error; e != nil {
		errCode = pgtype.Text{String: e.Code, Valid: true}
		errMsg, errClass, errAttempt = e.Message, string(e.Class), int32(e.Attempt)
	}
	if e := j.LastError; e != nil {
		lastErrCode = pgtype.Text{String: e.Code, Valid: true}
		lastErrMsg, lastErrClass, lastErrAttempt = e.Message, string(e.Class), int32(e.Attempt)
	}
	return []any{
		j.ID, j.Tenant, j.Kind, j.Queue, j.Topic, int32(j.Priority), rawText(j.Payload), j.ContextPtr, j.AdapterID, env,
		j.DedupeKey, int32(j.MaxAttempts), string(j.OnExhausted), int64(j.Timeout), timestamptz(j.Deadline),
		int64(j.CancelGrace), budgetRuntime, budgetSteps, budgetCost, j.CorrelationID, j.TraceID, j.ParentJobID,
		j.RunID, int32(j.StepIndex), j.ReplayOf, j.DependsOn, j.CreatedAt,
		string(j.State), int32(j.Attempt), int32(j.Failures), j.Rev, j.RunAt, j.Owner, j.LeaseID,
		timestamptz(j.LeaseExpiresAt), timestamptz(j.TimeoutAt), timestamptz(j.CancelDeadline), string(j.LeaseEndedBy),
		j.LastOwner, j.LastLeaseID, timestamptz(j.LastLeaseExpiresAt), rawText(j.Checkpoint), rawText(j.Progress), j.Phase,
		j.Usage.Steps, j.Usage.Cost, j.Usage.RuntimeMS, rawText(j.Result), j.ResultPtr, j.ResultDigest,
		errCode, errMsg, errClass, errAttempt, lastErrCode, lastErrMsg, lastErrClass, lastErrAttempt,
		j.ReasonCode, j.Reason, j.ExecutionMS, j.UpdatedAt, timestamptz(j.StartedAt), timestamptz(j.AttemptStartedAt),
		timestamptz(j.FinishedAt),
	}, nil
}
