package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// envRestart allows TestPoolRecoversFromRestart to restart the PostgreSQL
// cluster, which disturbs every other user of it.
const envRestart = "STINT_TEST_PG_RESTART"

// After PostgreSQL restarts, every pooled connection is dead; the store's
// next operations ride out the restart by retrying on new connections, and
// its listener reconnects.
func TestPoolRecoversFromRestart(t *testing.T) {
	if os.Getenv(envRestart) != "1" {
		t.Skipf("restarts the PostgreSQL cluster; set %s=1 to run it", envRestart)
	}
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	enqueue(t, s, 10, "q")
	before, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 5, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(before) != 5 {
		t.Fatalf("claim before the restart: %v, %d jobs", err, len(before))
	}

	restartCluster(t)

	// The first operations meet the dead connections and retry.
	start := time.Now()
	enqueue(t, s, 10, "q")
	t.Logf("first enqueue after the restart took %s", time.Since(start).Round(time.Millisecond))
	after, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 100, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(after) != 15 {
		t.Fatalf("claim after the restart: %v, %d jobs; want the 15 queued", err, len(after))
	}
	done := make([]store.JobCompleteParams, 0, 20)
	for _, j := range append(before, after...) {
		done = append(done, store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: []byte(`1`)})
	}
	res, err := s.JobComplete(ctx, done)
	if err != nil {
		t.Fatalf("complete after the restart: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("complete %s: %v", r.Job.ID, r.Err)
		}
	}
	verifyClean(t, s)
	t.Logf("claim, complete and verify after the restart took %s in all", time.Since(start).Round(time.Millisecond))

	// The listener is back: this store hears another's commits.
	other, err := postgres.OpenStore(ctx, pgtest.URL(t), postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	awaitWakeup(t, s, func() { enqueue(t, other, 1, "after") }, "after")
}

// restartCluster restarts the local PostgreSQL cluster the way the CI
// machine runs it (pg_ctlcluster returns once the server is up again).
func restartCluster(t *testing.T) {
	t.Helper()
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		t.Skipf("no local PostgreSQL cluster to restart (/etc/postgresql): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("restart the cluster: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	t.Log("restarted PostgreSQL", versions[0].Name())
}
