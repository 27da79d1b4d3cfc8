package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// callerTx begins a transaction on a plain connection of the caller's own,
// whose search_path knows nothing of stint's schema.
func callerTx(t *testing.T) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL search_path TO public`); err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestEnqueueTxFollowsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, d := newStore(t, postgres.Options{})
			ctx := context.Background()
			tx := callerTx(t)
			res, err := d.EnqueueTx(ctx, tx, &store.JobEnqueueParams{Jobs: specs(2, "q")})
			if err != nil {
				t.Fatal(err)
			}
			id := res[0].Job.ID
			if _, err := s.JobGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("before the caller commits, JobGet: %v; want not found", err)
			}
			var path string
			if err := tx.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil || path != "public" {
				t.Fatalf("caller's search_path after EnqueueTx: %q, %v; want public", path, err)
			}
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.JobGet(ctx, id)
			switch {
			case commit && err != nil:
				t.Fatalf("after commit, JobGet: %v; want the job", err)
			case !commit && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("after rollback, JobGet: %v; want not found", err)
			}
			if commit {
				verifyClean(t, s)
			}
		})
	}
}

// A rejected enqueue rolls back its savepoint and leaves the caller's
// transaction usable.
func TestEnqueueTxRejectionKeepsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	tx := callerTx(t)
	_, err := postgres.EnqueueTx(ctx, tx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: ""}}}, postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if !errors.Is(err, store.ErrValidation) {
		t.Fatalf("enqueue without a kind: %v; want a validation error", err)
	}
	res, err := postgres.EnqueueTx(ctx, tx, &store.JobEnqueueParams{Jobs: specs(1, "q")}, postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if err != nil {
		t.Fatalf("enqueue after a rejected one: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 5, LeaseTTL: time.Minute})
	if err != nil || len(claimed) != 1 || claimed[0].ID != res[0].Job.ID {
		t.Fatalf("claim after commit: %v, %d jobs; want the enqueued one", err, len(claimed))
	}
}

// Dedupe holds across the caller's transaction and the store.
func TestEnqueueTxDedupes(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	spec := lifecycle.Spec{Kind: "test", Queue: "q", DedupeKey: "k"}
	first, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	tx := callerTx(t)
	defer tx.Rollback(ctx)
	res, err := d.EnqueueTx(ctx, tx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Existing || res[0].Job.ID != first[0].Job.ID {
		t.Errorf("EnqueueTx with a live dedupe key: existing %v id %s; want the existing job %s", res[0].Existing, res[0].Job.ID, first[0].Job.ID)
	}
}
