package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

var _ store.StepTx = (*tx)(nil)

const (
	stepColumns = `job_id, seq, name, kind, attempt, lease_id, status, output, error, duration_ms, recorded_at`
	qStepInsert = `INSERT INTO job_steps (` + stepColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	qStepList   = `SELECT ` + stepColumns + ` FROM job_steps WHERE job_id = ANY($1) ORDER BY job_id, seq`
	qStepLast   = `SELECT ` + stepColumns + ` FROM job_steps WHERE job_id = $1 ORDER BY seq DESC LIMIT 1`

	signalColumns = `job_id, name, payload, actor_id, sent_at`
	qSignalInsert = `INSERT INTO job_signals (` + signalColumns + `) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (job_id, name) DO NOTHING`
	qSignalGet    = `SELECT ` + signalColumns + ` FROM job_signals WHERE job_id = $1 AND name = $2`
	qSignalList   = `SELECT ` + signalColumns + ` FROM job_signals WHERE job_id = $1 ORDER BY sent_at, name`
	qJobState     = `SELECT state FROM jobs WHERE id = $1`
)

// StepInsert queues the record with the transaction's other writes: it is
// sent with them, in the round trip that commits.
func (t *tx) StepInsert(ctx context.Context, r store.StepRecord) error {
	var errJSON any // NULL unless the step failed
	if r.Error != nil {
		b, err := json.Marshal(r.Error)
		if err != nil {
			return err
		}
		errJSON = string(b)
	}
	t.pending.Queue(qStepInsert, r.JobID, r.Seq, r.Name, r.Kind, r.Attempt, r.LeaseID, r.Status,
		textOrNil(r.Output), errJSON, r.DurationMS, r.RecordedAt).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: insert step %d of job %s: %w", r.Seq, r.JobID, err)
	})
	return nil
}

func (t *tx) StepList(ctx context.Context, jobIDs []string) ([]store.StepRecord, error) {
	return rows(ctx, t, qStepList, []any{jobIDs}, scanStep)
}

func (t *tx) StepLast(ctx context.Context, jobID string) (store.StepRecord, bool, error) {
	recs, err := rows(ctx, t, qStepLast, []any{jobID}, scanStep)
	if err != nil || len(recs) == 0 {
		return store.StepRecord{}, false, err
	}
	return recs[0], true, nil
}

func scanStep(row pgx.CollectableRow) (store.StepRecord, error) {
	var r store.StepRecord
	var output *string
	var errJSON []byte
	if err := row.Scan(&r.JobID, &r.Seq, &r.Name, &r.Kind, &r.Attempt, &r.LeaseID, &r.Status, &output, &errJSON, &r.DurationMS, &r.RecordedAt); err != nil {
		return r, err
	}
	if output != nil {
		r.Output = json.RawMessage(*output)
	}
	if errJSON != nil {
		r.Error = &lifecycle.JobError{}
		if err := json.Unmarshal(errJSON, r.Error); err != nil {
			return r, fmt.Errorf("postgres: step %d of job %s: its error: %w", r.Seq, r.JobID, err)
		}
	}
	r.RecordedAt = r.RecordedAt.UTC()
	return r, nil
}

func (t *tx) SignalInsert(ctx context.Context, s store.Signal) (bool, error) {
	tag, err := t.exec(ctx, qSignalInsert, s.JobID, s.Name, textOrNil(s.Payload), s.ActorID, s.SentAt)
	if err != nil {
		return false, fmt.Errorf("postgres: insert signal %s of job %s: %w", s.Name, s.JobID, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (t *tx) SignalGet(ctx context.Context, jobID, name string) (store.Signal, bool, error) {
	sigs, err := rows(ctx, t, qSignalGet, []any{jobID, name}, scanSignal)
	if err != nil || len(sigs) == 0 {
		return store.Signal{}, false, err
	}
	return sigs[0], true, nil
}

func (t *tx) SignalList(ctx context.Context, jobID string) ([]store.Signal, error) {
	return rows(ctx, t, qSignalList, []any{jobID}, scanSignal)
}

func (t *tx) JobEnded(ctx context.Context, jobID string) (bool, error) {
	states, err := rows(ctx, t, qJobState, []any{jobID}, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("postgres: read the state of job %s: %w", jobID, err)
	}
	return len(states) == 1 && lifecycle.State(states[0]).Terminal(), nil
}

func scanSignal(row pgx.CollectableRow) (store.Signal, error) {
	var s store.Signal
	var payload *string
	var at time.Time
	if err := row.Scan(&s.JobID, &s.Name, &payload, &s.ActorID, &at); err != nil {
		return s, err
	}
	if payload != nil {
		s.Payload = json.RawMessage(*payload)
	}
	s.SentAt = at.UTC()
	return s, nil
}

// textOrNil passes JSON bytes as text (kept byte for byte), nil as NULL.
func textOrNil(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return string(r)
}
