package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/storetest"
)

// TestCorruption runs the corruption suite on PostgreSQL: each checked
// column of a job's row is changed behind the store's back, and Verify must
// report that job.
func TestCorruption(t *testing.T) {
	t.Parallel()
	storetest.Corruption(t, func(t *testing.T) (store.Store, storetest.Corrupter) {
		d := pgtest.NewDriver(t, postgres.Options{})
		s := store.New(d, store.Options{})
		t.Cleanup(func() { _ = s.Close() })
		return s, func(ctx context.Context, jobID, column string) error { return corrupt(ctx, d, "jobs", jobID, column) }
	})
}

// TestRunCorruption runs the corruption suite for runs on PostgreSQL: each
// checked column of a run's row is changed behind the store's back, and
// Verify must report that run.
func TestRunCorruption(t *testing.T) {
	t.Parallel()
	storetest.RunCorruption(t, func(t *testing.T) (store.Store, storetest.RunCorrupter) {
		d := pgtest.NewDriver(t, postgres.Options{})
		s := store.New(d, store.Options{})
		t.Cleanup(func() { _ = s.Close() })
		return s, func(ctx context.Context, runID, column string) error { return corrupt(ctx, d, "runs", runID, column) }
	})
}

// corrupt changes one column of one row of table (jobs or runs) with a plain UPDATE, to a
// value of the column's type that differs from the stored one: state
// becomes another state, a NULL gets a value, a time moves by an hour, a
// text gets a suffix, a number grows by one.
func corrupt(ctx context.Context, d *postgres.Driver, table, id, column string) error {
	var typ string
	err := d.Pool().QueryRow(ctx, `SELECT data_type FROM information_schema.columns
WHERE table_schema = $1 AND table_name = $2 AND column_name = $3`, d.Schema(), table, column).Scan(&typ)
	if err != nil {
		return fmt.Errorf("column %s: %w", column, err)
	}
	col := pgx.Identifier{column}.Sanitize()
	var set string
	switch {
	case column == "state":
		set = `CASE WHEN state = 'queued' THEN 'running' ELSE 'queued' END`
	case typ == "timestamp with time zone":
		set = `CASE WHEN ` + col + ` IS NULL THEN statement_timestamp() ELSE ` + col + ` + interval '1 hour' END`
	case typ == "text":
		set = `coalesce(` + col + `, '') || '-corrupt'`
	case typ == "integer" || typ == "bigint":
		set = `coalesce(` + col + `, 0) + 1`
	default:
		return fmt.Errorf("column %s: no way to corrupt a %s", column, typ)
	}
	tag, err := d.Pool().Exec(ctx, `UPDATE `+pgx.Identifier{table}.Sanitize()+` SET `+col+` = `+set+` WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("%s %s: %d rows changed", table, id, tag.RowsAffected())
	}
	return err
}
