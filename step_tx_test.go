package stint_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

var errCounted = errors.New("counted")

// ledgerRows counts the ledger's rows in a transaction of d that rolls back.
func ledgerRows(t *testing.T, d *postgres.Driver) int {
	t.Helper()
	var n int
	_, err := d.StepInTx(context.Background(), &store.JobStepParams{}, func(ctx context.Context, tx pgx.Tx) (json.RawMessage, error) {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM ledger`).Scan(&n); err != nil {
			return nil, err
		}
		return nil, errCounted
	})
	if !errors.Is(err, errCounted) {
		t.Fatalf("count the ledger: %v", err)
	}
	return n
}

// TestStepTxExactlyOnce: a transactional step's own write and its record
// commit together. An attempt that fails after the step does not repeat
// the write on its retry; a stale lease's step rolls its write back.
func TestStepTxExactlyOnce(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	s := store.New(d, store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	e := newEnv(t, "postgres", clock.NewManual(time.Now().UTC().Truncate(time.Second)), s)
	// The handler's own table, in the store's schema, made outside any step.
	conn, err := pgx.Connect(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var schema string
	_, _ = d.StepInTx(context.Background(), &store.JobStepParams{}, func(ctx context.Context, tx pgx.Tx) (json.RawMessage, error) {
		return nil, tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	})
	if _, err := conn.Exec(context.Background(), `CREATE TABLE `+pgx.Identifier{schema, "ledger"}.Sanitize()+` (job text, amount int)`); err != nil {
		t.Fatal(err)
	}

	mux := muxOf("debit", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
		n, err := stint.StepTx(ctx, j, d, "debit", func(ctx context.Context, tx pgx.Tx) (int, error) {
			_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ($1, 10)`, j.ID())
			return 10, err
		})
		if err != nil {
			return err
		}
		if j.Attempt() == 1 {
			return errors.New("crash after the debit")
		}
		return j.SetResult(n)
	}))
	e.start(mux, e.config())
	id := e.enqueue(stint.Spec{Kind: "debit"}).ID
	e.waitState(id, stint.Retrying)
	e.promote()
	if j := e.waitState(id, stint.Succeeded); string(j.Result) != "10" {
		t.Fatalf("result %s", j.Result)
	}
	if n := ledgerRows(t, d); n != 1 {
		t.Fatalf("%d ledger rows, want the one debit", n)
	}
	// A stale lease: the function runs, the record is refused, the write
	// rolls back with it.
	_, err = d.StepInTx(context.Background(), &store.JobStepParams{OwnerParams: store.OwnerParams{JobID: id, LeaseID: "stale"},
		Seq: 2, Name: "again", Status: store.StepOK}, func(ctx context.Context, tx pgx.Tx) (json.RawMessage, error) {
		_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ($1, 99)`, id)
		return json.RawMessage(`1`), err
	})
	if !errors.Is(err, store.ErrStaleLease) && !errors.Is(err, store.ErrInvalidTransition) {
		t.Fatalf("a step of a finished job: %v", err)
	}
	if n := ledgerRows(t, d); n != 1 {
		t.Fatalf("%d ledger rows after a refused step, want 1", n)
	}
}
