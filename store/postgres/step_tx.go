package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

// StepInTx runs a transactional step (stint.StepTx): it begins a
// transaction on the driver's pool, hands it to fn for the handler's own
// writes to this database, and records the step's output in the same
// transaction, fenced by the lease p presents. Either both commit or
// neither: a stale lease, a step recorded meanwhile by another attempt, or
// an error of fn rolls back fn's writes too. So database side effects of a
// step happen exactly once, not merely at least once.
func (d *Driver) StepInTx(ctx context.Context, p *store.JobStepParams, fn func(context.Context, pgx.Tx) (json.RawMessage, error)) (store.StepRecord, error) {
	var rec store.StepRecord
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		out, err := fn(ctx, tx)
		if err != nil {
			return err
		}
		ss, err := store.Steps(store.New(d.WithTx(tx), store.Options{}))
		if err != nil {
			return err
		}
		q := *p
		q.Output = out
		_, rec, err = ss.JobStepRecord(ctx, &q)
		return err
	})
	return rec, err
}
