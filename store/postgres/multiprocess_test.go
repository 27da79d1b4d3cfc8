package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// The multi-process claim test: sizes, and the environment that turns the
// test binary into a claimer process.
const (
	mpProcesses = 4
	mpClaimers  = 16
	mpJobs      = 10000
	mpQueue     = "mp"

	envHelper = "STINT_TEST_HELPER_PROCESS"
	envSchema = "STINT_TEST_HELPER_SCHEMA"
)

// Four OS processes with sixteen claimers each race over 10,000 jobs in one
// schema. Counted from the event log, every job is claimed exactly once.
func TestMultiProcessClaimsEachJobOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes over 10,000 jobs; run without -short")
	}
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	for range mpJobs / 1000 {
		enqueue(t, s, 1000, mpQueue)
	}

	outs := make([]bytes.Buffer, mpProcesses)
	errs := make([]error, mpProcesses)
	var wg sync.WaitGroup
	for i := range mpProcesses {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"=claim", envSchema+"="+d.Schema())
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
		n, ok := claimedCount(outs[i].String())
		if !ok {
			t.Fatalf("process %d reported no count:\n%s", i, outs[i].String())
		}
		t.Logf("process %d claimed %d jobs", i, n)
		total += n
	}
	if total != mpJobs {
		t.Errorf("the processes claimed %d jobs in all, want %d", total, mpJobs)
	}

	var jobs, claimed, doubles, notDone int
	err := d.Pool().QueryRow(ctx, `
		SELECT (SELECT count(*) FROM jobs),
		       (SELECT count(DISTINCT job_id) FROM job_events WHERE type = 'claimed'),
		       (SELECT count(*) FROM (SELECT job_id FROM job_events WHERE type = 'claimed' GROUP BY job_id HAVING count(*) <> 1) x),
		       (SELECT count(*) FROM jobs WHERE state <> 'succeeded')`).Scan(&jobs, &claimed, &doubles, &notDone)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != mpJobs || claimed != mpJobs || doubles != 0 || notDone != 0 {
		t.Errorf("%d jobs, %d with a claimed event, %d claimed more than once, %d not succeeded; want %d, %d, 0, 0",
			jobs, claimed, doubles, notDone, mpJobs, mpJobs)
	}
	verifyClean(t, s)
}

// claimedCount finds the "claimed N" line a helper process prints.
func claimedCount(out string) (int, bool) {
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "claimed "); ok {
			v, err := strconv.Atoi(strings.TrimSpace(n))
			return v, err == nil
		}
	}
	return 0, false
}

// TestHelperProcess is not a test: it is the body of a claimer process
// spawned by TestMultiProcessClaimsEachJobOnce.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "claim" {
		t.Skip("a helper process of another test")
	}
	ctx := context.Background()
	s, err := postgres.OpenStore(ctx, pgtest.URL(t), postgres.Options{Schema: os.Getenv(envSchema), MaxConns: 8, Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counts := make([]int, mpClaimers)
	errs := make([]error, mpClaimers)
	var wg sync.WaitGroup
	for c := range mpClaimers {
		wg.Go(func() { counts[c], errs[c] = claimUntilEmpty(ctx, s, fmt.Sprintf("p%d-c%d", os.Getpid(), c)) })
	}
	wg.Wait()
	total := 0
	for c := range mpClaimers {
		if errs[c] != nil {
			t.Fatalf("claimer %d: %v", c, errs[c])
		}
		total += counts[c]
	}
	fmt.Printf("claimed %d\n", total)
}

// claimUntilEmpty claims, starts and completes jobs a few at a time until
// no queued job is left, and returns how many it claimed. A claim can come
// back empty while queued jobs remain locked by other claimers, so an empty
// claim ends the loop only when no job is queued at all.
func claimUntilEmpty(ctx context.Context, s store.Store, worker string) (int, error) {
	n := 0
	for {
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: worker, Queues: []string{mpQueue}, Limit: 8, LeaseTTL: time.Hour, Start: true})
		if err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			left, err := s.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.Queued}, Limit: 1})
			if err != nil || len(left) == 0 {
				return n, err
			}
			continue
		}
		n += len(jobs)
		done := make([]store.JobCompleteParams, len(jobs))
		for i, j := range jobs {
			done[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: json.RawMessage(`true`)}
		}
		res, err := s.JobComplete(ctx, done)
		if err != nil {
			return n, err
		}
		for _, r := range res {
			if r.Err != nil {
				return n, r.Err
			}
		}
	}
}
