package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

var _ store.StepTx = (*txn)(nil)

const (
	stepColumns   = `job_id, seq, name, kind, attempt, lease_id, status, output, error, duration_ms, recorded_at`
	qStepInsert   = `INSERT INTO job_steps (` + stepColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qStepList     = `SELECT ` + stepColumns + ` FROM job_steps WHERE job_id IN (SELECT value FROM json_each(?)) ORDER BY job_id, seq`
	qStepLast     = `SELECT ` + stepColumns + ` FROM job_steps WHERE job_id = ? ORDER BY seq DESC LIMIT 1`
	signalColumns = `job_id, name, payload, actor_id, sent_at`
	qSignalInsert = `INSERT INTO job_signals (` + signalColumns + `) VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id, name) DO NOTHING`
	qSignalGet    = `SELECT ` + signalColumns + ` FROM job_signals WHERE job_id = ? AND name = ?`
	qSignalList   = `SELECT ` + signalColumns + ` FROM job_signals WHERE job_id = ? ORDER BY sent_at, name`
	qJobState     = `SELECT state FROM jobs WHERE id = ?`
)

func (t *txn) StepInsert(ctx context.Context, r store.StepRecord) error {
	var errText any
	if r.Error != nil {
		b, err := json.Marshal(r.Error)
		if err != nil {
			return err
		}
		errText = string(b)
	}
	st, err := t.prep(ctx, qStepInsert)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(t.stmtCtx(ctx), r.JobID, r.Seq, r.Name, r.Kind, r.Attempt, r.LeaseID, r.Status,
		rawText(r.Output), errText, r.DurationMS, micros(r.RecordedAt))
	if err != nil {
		return fmt.Errorf("sqlite: insert step %d of job %s: %w", r.Seq, r.JobID, err)
	}
	return nil
}

func (t *txn) StepList(ctx context.Context, jobIDs []string) ([]store.StepRecord, error) {
	return rowsOf(scanStep)(t.query(ctx, qStepList, jsonList(jobIDs)))
}

func (t *txn) StepLast(ctx context.Context, jobID string) (store.StepRecord, bool, error) {
	st, err := t.prep(ctx, qStepLast)
	if err != nil {
		return store.StepRecord{}, false, err
	}
	rows, err := st.QueryContext(t.stmtCtx(ctx), jobID)
	recs, err := rowsOf(scanStep)(rows, err)
	if err != nil || len(recs) == 0 {
		return store.StepRecord{}, false, err
	}
	return recs[0], true, nil
}

func scanStep(rows *sql.Rows) (store.StepRecord, error) {
	var r store.StepRecord
	var output, errText sql.NullString
	var at int64
	if err := rows.Scan(&r.JobID, &r.Seq, &r.Name, &r.Kind, &r.Attempt, &r.LeaseID, &r.Status, &output, &errText, &r.DurationMS, &at); err != nil {
		return r, err
	}
	if output.Valid {
		r.Output = json.RawMessage(output.String)
	}
	if errText.Valid {
		r.Error = &lifecycle.JobError{}
		if err := json.Unmarshal([]byte(errText.String), r.Error); err != nil {
			return r, fmt.Errorf("sqlite: step %d of job %s: its error: %w", r.Seq, r.JobID, err)
		}
	}
	r.RecordedAt = fromMicros(at)
	return r, nil
}

func (t *txn) SignalInsert(ctx context.Context, s store.Signal) (bool, error) {
	res, err := t.exec(ctx, qSignalInsert, s.JobID, s.Name, rawText(s.Payload), s.ActorID, micros(s.SentAt))
	if err != nil {
		return false, fmt.Errorf("sqlite: insert signal %s of job %s: %w", s.Name, s.JobID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (t *txn) SignalGet(ctx context.Context, jobID, name string) (store.Signal, bool, error) {
	sigs, err := rowsOf(scanSignal)(t.query(ctx, qSignalGet, jobID, name))
	if err != nil || len(sigs) == 0 {
		return store.Signal{}, false, err
	}
	return sigs[0], true, nil
}

func (t *txn) SignalList(ctx context.Context, jobID string) ([]store.Signal, error) {
	return rowsOf(scanSignal)(t.query(ctx, qSignalList, jobID))
}

func (t *txn) JobEnded(ctx context.Context, jobID string) (bool, error) {
	states, err := rowsOf(func(r *sql.Rows) (s string, err error) { return s, r.Scan(&s) })(t.query(ctx, qJobState, jobID))
	if err != nil {
		return false, fmt.Errorf("sqlite: read the state of job %s: %w", jobID, err)
	}
	return len(states) == 1 && lifecycle.State(states[0]).Terminal(), nil
}

func scanSignal(rows *sql.Rows) (store.Signal, error) {
	var s store.Signal
	var payload sql.NullString
	var at int64
	if err := rows.Scan(&s.JobID, &s.Name, &payload, &s.ActorID, &at); err != nil {
		return s, err
	}
	if payload.Valid {
		s.Payload = json.RawMessage(payload.String)
	}
	s.SentAt = fromMicros(at)
	return s, nil
}
