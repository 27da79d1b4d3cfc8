package remote_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// TestClusterFailoverUnderLoad: two `stint server` processes on one
// PostgreSQL database, four remote worker processes long-polling both, jobs
// enqueued batch after batch. One server is killed with SIGKILL while jobs
// are being claimed and worked: every job still succeeds, no attempt runs
// twice, and `stint verify` finds nothing. Jobs the dead server had leased
// to long polls whose replies were lost come back when their (short) lease
// expires.
func TestClusterFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts server and worker processes")
	}
	s, dbURL, schema, token := newCluster(t)
	client, worker := token(store.RoleClient), token(store.RoleWorker)
	url1, srv1 := startServer(t, dbURL, schema)
	url2, _ := startServer(t, dbURL, schema)
	urls := url1 + "," + url2

	logPath := filepath.Join(t.TempDir(), "executions.log")
	for i := range 4 {
		// Half the workers start on each server: the kill cuts long polls
		// and calls under way.
		order := urls
		if i%2 == 1 {
			order = url2 + "," + url1
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+order, envToken+"="+worker, envLog+"="+logPath, envLease+"=3s")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	}
	producer, err := remote.New(remote.Options{URL: urls, Token: client})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	enqueue := func(batches int) {
		for range batches {
			specs := make([]lifecycle.Spec, 25)
			for i := range specs {
				specs[i] = lifecycle.Spec{Kind: "count", Queue: "work", Payload: fmt.Appendf(nil, `{"i":%d}`, len(ids)+i)}
			}
			res, err := producer.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				ids = append(ids, r.Job.ID)
			}
		}
	}
	enqueue(8)
	waitSucceeded(t, s, 50) // under way: some done, most queued or leased
	if err := srv1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	enqueue(8) // the producer moves to the live server too
	for _, id := range ids {
		waitState(t, s, id, lifecycle.Succeeded)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		runs[line]++
	}
	for run, n := range runs {
		if n != 1 {
			t.Errorf("execution %q happened %d times", run, n)
		}
	}
	report, err := s.Verify(t.Context(), &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Findings) > 0 || report.Jobs != len(ids) {
		t.Fatalf("verify: %d jobs (want %d), findings %v", report.Jobs, len(ids), report.Findings)
	}
}

// waitSucceeded waits until at least n jobs succeeded.
func waitSucceeded(t *testing.T, s store.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		js, err := s.JobList(t.Context(), &store.JobListParams{States: []lifecycle.State{lifecycle.Succeeded}, Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs succeeded after 60s, want %d", len(js), n)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
