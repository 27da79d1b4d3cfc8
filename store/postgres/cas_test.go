package postgres_test

import (
	"errors"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// A compare-and-swap that misses fails the transaction at once, with a
// revision conflict, and nothing of it is written: the UPDATE itself
// raises, so the COMMIT pipelined behind it never runs.
func TestCASMissRollsBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, d := newStore(t, postgres.Options{})
	job := enqueue(t, s, 1, "q")[0]
	before, err := s.JobEvents(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	moved := job
	moved.Rev, moved.State = job.Rev+1, lifecycle.Cancelled
	ev := lifecycle.Event{JobID: job.ID, Type: lifecycle.EventCancelled, Op: lifecycle.OpCancel, Rev: moved.Rev, At: job.UpdatedAt}
	err = d.InTx(ctx, func(tx store.Tx) error {
		// Lock the row first, as the engine does: the transaction then has
		// an id, and a failure must not be taken for a broken COMMIT.
		if _, err := tx.JobGet(ctx, []string{job.ID}); err != nil {
			return err
		}
		if err := tx.JobUpdate(ctx, []store.JobUpdate{{Job: moved, PrevRev: job.Rev + 7}}); err != nil {
			return err
		}
		return tx.EventInsert(ctx, []lifecycle.Event{ev})
	})
	if !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("update at a stale rev: %v; want a revision conflict", err)
	}
	after, err := s.JobGet(ctx, job.ID)
	if err != nil || after.Rev != job.Rev || after.State != job.State {
		t.Fatalf("the job after a missed update: %+v, %v; want it unchanged", after, err)
	}
	evs, err := s.JobEvents(ctx, job.ID)
	if err != nil || len(evs) != len(before) {
		t.Fatalf("events after a missed update: %d, %v; want the %d there were", len(evs), err, len(before))
	}
}
