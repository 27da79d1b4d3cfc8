package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// The environment of a child process: the database, and its pool's lease.
const (
	envChild         = "STINT_E2E_CHILD"
	envChildSQLite   = "STINT_E2E_SQLITE"
	envChildPGURL    = "STINT_E2E_PG_URL"
	envChildPGSchema = "STINT_E2E_PG_SCHEMA"
	envChildLease    = "STINT_E2E_LEASE"
)

const killKind = "e2e.kill"

// TestHelperProcess is not a test: it is the worker process that
// TestSIGKILL starts (re-running the test binary) and kills. It runs a pool
// on the database its environment names. Jobs whose payload says "block"
// print "STARTED id" on stdout and never return; the others succeed. It
// exits when its stdin closes (its parent is gone).
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envChild) == "" {
		t.Skip("the worker process of TestSIGKILL")
	}
	ctx := context.Background()
	s := openChildStore(ctx, 4) // steps_kill_test.go
	lease, err := time.ParseDuration(os.Getenv(envChildLease))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: lease:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	mux := stint.NewMux()
	mux.HandleFunc(killKind, func(ctx context.Context, j *stint.Job) error {
		var p struct{ Block bool }
		_ = json.Unmarshal(j.Payload(), &p)
		if !p.Block {
			return nil
		}
		mu.Lock()
		fmt.Printf("STARTED %s\n", j.ID())
		mu.Unlock()
		select {} // until SIGKILL
	})
	p, err := stint.NewPool(s, mux, stint.Config{WorkerID: "doomed", LeaseTTL: lease, Logger: logger("doomed"), NoMaintenance: true})
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent holds stdin open until it kills us
	os.Exit(0)
}

// TestSIGKILL: a worker process killed with SIGKILL in the middle of its
// jobs loses nothing: what it finished stays finished, and once its leases
// expire the maintenance services requeue what it was running and another
// worker finishes it. Each job succeeds exactly once.
func TestSIGKILL(t *testing.T) {
	onBoth(t, func(t *testing.T, e *env) {
		const blocking, quick = 4, 4
		ids := map[string]bool{} // id → blocks
		var specs []stint.Spec
		for i := range blocking + quick {
			specs = append(specs, stint.Spec{Kind: killKind, Payload: json.RawMessage(fmt.Sprintf(`{"block": %v}`, i < blocking))})
		}
		res, err := e.client.EnqueueMany(context.Background(), specs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			ids[r.Job.ID] = i < blocking
		}

		// The child's lease runs on the real clock. On SQLite the parent's
		// manual clock then moves past it; on PostgreSQL it simply passes.
		child := startChild(t, e, e.pick(stint.DefaultLeaseTTL, 2*time.Second))
		started := map[string]bool{}
		for len(started) < blocking {
			id := child.next(t)
			if !ids[id] {
				t.Fatalf("the child started %s, which does not block", id)
			}
			started[id] = true
		}
		e.until("the child to finish the quick jobs", 0, func() bool {
			for id, blocks := range ids {
				if !blocks && e.get(id).State != stint.Succeeded {
					return false
				}
			}
			return true
		})
		child.kill(t)

		e.maintain()
		survived := map[string]int{}
		var mu sync.Mutex
		e.startPool(e.poolConfig("survivor"), killKind, func(_ context.Context, j *stint.Job) error {
			mu.Lock()
			survived[j.ID()]++
			mu.Unlock()
			return nil
		})
		for id, blocks := range ids {
			j := e.untilState(id, stint.Succeeded, e.step())
			if !blocks {
				if j.Attempt != 1 || j.LastOwner != "doomed" {
					t.Errorf("quick job %s: attempt %d by %s, want attempt 1 by the child", id, j.Attempt, j.LastOwner)
				}
				continue
			}
			if j.Attempt != 2 || j.LastOwner != "survivor" {
				t.Errorf("job %s: attempt %d by %s, want attempt 2 by the survivor", id, j.Attempt, j.LastOwner)
			}
			evs := e.wantTypes(id, lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted,
				lifecycle.EventStalled, lifecycle.EventRequeued, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventSucceeded)
			if st := lastEvent(evs, lifecycle.EventStalled); st.Reason != lifecycle.ReasonLeaseExpired || st.Actor != lifecycle.ActorSystem {
				t.Errorf("job %s stalled by %s for %q, want the system for lease_expired", id, st.Actor, st.Reason)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for id, blocks := range ids {
			if want := map[bool]int{true: 1, false: 0}[blocks]; survived[id] != want {
				t.Errorf("the survivor ran job %s %d times, want %d", id, survived[id], want)
			}
		}
	})
}

// child is a worker process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	log   string
}

func startChild(t *testing.T, e *env, lease time.Duration) *child {
	t.Helper()
	c := &child{lines: make(chan string, 64), log: filepath.Join(t.TempDir(), "child.log")}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), append(e.childEnv, envChild+"=1", envChildLease+"="+lease.String())...)
	logFile, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	c.cmd.Stderr = logFile
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the child: %v", err)
	}
	t.Cleanup(func() { // in case the test failed before the kill
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "STARTED "); ok {
				c.lines <- id
			}
		}
		close(c.lines)
	}()
	return c
}

// next returns the id of the next job the child started.
func (c *child) next(t *testing.T) string {
	t.Helper()
	select {
	case id, ok := <-c.lines:
		if !ok {
			log, _ := os.ReadFile(c.log)
			t.Fatalf("the child exited early; its log:\n%s", log)
		}
		return id
	case <-time.After(patience):
		t.Fatal("gave up waiting for the child to start a job")
		return ""
	}
}

// kill sends SIGKILL and waits for the child to die of it.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill the child: %v", err)
	}
	err := c.cmd.Wait()
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want killed by SIGKILL", err)
	}
}
