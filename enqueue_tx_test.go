package stint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// The documented way to enqueue inside the caller's own PostgreSQL
// transaction: a Client on a store whose transactions are savepoints of it.
func TestClientEnqueuesInsideTheCallersTransaction(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "commit", false: "rollback"}[commit], func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewDriver(t, postgres.Options{})
			s := store.New(d, store.Options{})
			ctx := context.Background()
			tx, err := d.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)

			inTx, err := stint.NewClient(store.New(d.WithTx(tx), store.Options{}), stint.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := inTx.Enqueue(ctx, stint.Spec{Kind: "mail.receipt"})
			if err != nil {
				t.Fatal(err)
			}
			outside, _ := stint.NewClient(s, stint.ClientConfig{})
			if _, err := outside.Get(ctx, res.Job.ID); !errors.Is(err, stint.ErrNotFound) {
				t.Fatalf("before the commit the job is visible outside the transaction: %v", err)
			}
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = outside.Get(ctx, res.Job.ID)
			if commit && err != nil {
				t.Errorf("after commit: %v, want the job", err)
			}
			if !commit && !errors.Is(err, stint.ErrNotFound) {
				t.Errorf("after rollback: %v, want ErrNotFound", err)
			}
		})
	}
}
