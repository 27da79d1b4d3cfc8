package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// Heartbeats change no indexed column and the jobs table leaves room on
// each page (fillfactor), so PostgreSQL makes them HOT updates: no index
// is written and the dead versions are pruned within the page.
func TestHeartbeatsAreHOT(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, d := newStore(t, postgres.Options{})
	enqueue(t, s, 1, "q")
	jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	before := updates(t, d)
	const beats = 20
	for range beats {
		if _, err := s.JobHeartbeat(ctx, &store.JobHeartbeatParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
			LeaseTTL: time.Minute, Progress: []byte(`{"pct":50}`), Phase: "working"}); err != nil {
			t.Fatal(err)
		}
	}
	// The server publishes table statistics a moment after the
	// transactions end: wait for all the heartbeats to show.
	deadline := time.Now().Add(30 * time.Second)
	for {
		after := updates(t, d)
		if after.all-before.all >= beats {
			if hot := after.hot - before.hot; hot < beats*3/4 {
				t.Errorf("%d of %d heartbeats were HOT updates, want nearly all", hot, after.all-before.all)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statistics show %d of %d heartbeat updates after 30 s", after.all-before.all, beats)
		}
		if _, err := d.Pool().Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
	}
}

type updateCounts struct{ all, hot int64 }

// updates reads the jobs table's update counters.
func updates(t *testing.T, d *postgres.Driver) updateCounts {
	t.Helper()
	var c updateCounts
	err := d.Pool().QueryRow(context.Background(),
		`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'jobs'`, d.Schema()).Scan(&c.all, &c.hot)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
