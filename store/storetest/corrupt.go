package storetest

import (
	"context"
	"testing"

	"github.com/stint-dev/stint/store"
)

// CheckedColumns are the columns of the jobs table that a claim, a filter, a
// maintenance query or a unique index reads. Both backends name them alike.
// Verify must find a job whose row disagrees with its events in any one of
// them.
var CheckedColumns = []string{
	"state", "attempt", "failures", "rev", "queue", "kind", "tenant", "topic", "priority", "dedupe_key",
	"created_at", "run_at", "lease_id", "owner", "lease_expires_at", "timeout_at", "cancel_deadline",
	"deadline", "finished_at", "result_digest",
}

// Corrupter changes one column of one job's row behind the store's back, to
// a value of the column's type that differs from the one stored (a NULL
// column gets a value; a set time moves by an hour; a text gets a suffix; a
// number grows by one; state becomes another state). The test calls it only
// for a column that the job's state makes meaningful.
type Corrupter func(ctx context.Context, jobID, column string) error

// Corruption runs the corruption suite: for every column of CheckedColumns,
// on a fresh store, build a job in a state where the column matters, change
// the column with corrupt, and expect Verify to report that job (and only
// that job). open returns a fresh store and the corrupter for its database.
func Corruption(t *testing.T, open func(t *testing.T) (store.Store, Corrupter)) {
	t.Helper()
	testCorruption(t, open)
}

// testCorruption is filled in by the layout change (issue 7); until then it
// fails, so no backend can pass without it.
func testCorruption(t *testing.T, _ func(t *testing.T) (store.Store, Corrupter)) {
	t.Fatal("storetest: the corruption suite is not written yet")
}
