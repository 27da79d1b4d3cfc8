package sqlite

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestBatchedUpdateConflict: jobs updated together in one statement still
// each need their expected rev; a stale one fails the update with a
// revision conflict naming that job, and the transaction writes nothing.
// The fresh batch writes only the columns it changes (Prev is the row).
func TestBatchedUpdateConflict(t *testing.T) {
	d, _ := openDriver(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	job := func(id string) lifecycle.Job {
		return lifecycle.Job{ID: id, Kind: "k", Queue: "q", MaxAttempts: 3, OnExhausted: lifecycle.DeadLettered,
			State: lifecycle.Queued, Rev: 1, RunAt: now, CreatedAt: now, UpdatedAt: now}
	}
	ids := []string{"a", "b", "c"}
	if err := d.InTx(t.Context(), func(tx store.Tx) error {
		return tx.JobInsert(t.Context(), []lifecycle.Job{job("a"), job("b"), job("c")})
	}); err != nil {
		t.Fatal(err)
	}
	update := func(stale string) error {
		return d.InTx(t.Context(), func(tx store.Tx) error {
			jobs, err := tx.JobGet(t.Context(), ids)
			if err != nil {
				return err
			}
			var us []store.JobUpdate
			for _, j := range jobs {
				prev, next := j.Rev, j
				if j.ID == stale {
					prev = 7
				}
				next.Rev, next.Phase, next.UpdatedAt = j.Rev+1, "moved", now.Add(time.Second)
				us = append(us, store.JobUpdate{Job: next, PrevRev: prev, Prev: j})
			}
			return tx.JobUpdate(t.Context(), us)
		})
	}
	err := update("b")
	var le *lifecycle.Error
	if !errors.As(err, &le) || !errors.Is(err, store.ErrRevisionConflict) || le.JobID != "b" {
		t.Fatalf("err = %v, want a revision conflict for job b", err)
	}
	check := func(rev int64, phase string) {
		t.Helper()
		d.Read(t.Context(), func(tx store.Tx) error {
			jobs, err := tx.JobGet(t.Context(), ids)
			if err != nil || len(jobs) != 3 {
				t.Fatalf("read: %v, %d jobs", err, len(jobs))
			}
			for _, j := range jobs {
				if j.Rev != rev || j.Phase != phase {
					t.Errorf("job %s at rev %d phase %q, want rev %d phase %q", j.ID, j.Rev, j.Phase, rev, phase)
				}
			}
			return nil
		})
	}
	check(1, "")
	if err := update(""); err != nil {
		t.Fatal(err)
	}
	check(2, "moved")
}
