// Package stinttest helps test code that uses stint, against a real store:
// a fresh SQLite store per test, checked at the end, and helpers that run
// jobs through a real worker pool.
//
//	func TestWelcomeMail(t *testing.T) {
//		s := stinttest.NewStore(t)
//		mux := stint.NewMux()
//		mux.HandleFunc("mail.welcome", sendWelcome)
//		j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "mail.welcome", Payload: json.RawMessage(`{"to":"ada@example.com"}`)})
//		if j.State != stint.Succeeded { t.Fatalf("%s: %+v", j.State, j.LastError) }
//	}
package stinttest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// Patience is how long WorkOne and Drain wait for jobs before they fail the
// test.
var Patience = time.Minute

// NewStore returns a store on a new SQLite file in t.TempDir(), closed when
// the test ends. At the end it also checks that every job's event log
// replays to the job (store.Verify) and fails the test if not.
func NewStore(t testing.TB) store.Store { return NewStoreWithClock(t, clock.System{}) }

// NewStoreWithClock is [NewStore] with the store's clock c, for example a
// *clock.Manual the test moves (give the pool the same clock).
func NewStoreWithClock(t testing.TB, c clock.Clock) store.Store {
	t.Helper()
	s, err := sqlite.OpenStore(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Clock: c})
	if err != nil {
		t.Fatalf("stinttest: open a SQLite store: %v", err)
	}
	t.Cleanup(func() {
		rep, err := s.Verify(context.Background(), &store.VerifyParams{})
		if err != nil {
			t.Errorf("stinttest: verify: %v", err)
		}
		for _, f := range rep.Findings {
			t.Errorf("stinttest: verify: job %s: %s", f.JobID, f.Problem)
		}
		_ = s.Close()
	})
	return s
}

// WorkOne enqueues spec in s, works it with mux's handlers until its
// attempt is over, and returns the job as it then stands: succeeded, or
// retrying, failed, halted, dead_lettered... Other jobs queued in the same
// queue may be worked too.
func WorkOne(t testing.TB, s store.Store, mux *stint.Mux, spec stint.Spec) stint.JobRecord {
	t.Helper()
	ctx := context.Background()
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []stint.Spec{spec}, ActorID: "stinttest"})
	if err != nil {
		t.Fatalf("stinttest: enqueue: %v", err)
	}
	id := res[0].Job.ID
	var j stint.JobRecord
	run(t, s, mux, []string{res[0].Job.Queue}, func() (bool, error) {
		j, err = s.JobGet(ctx, id)
		return err == nil && j.Attempt > 0 && !busy(j.State), err
	})
	return j
}

// Drain works the jobs of mux's kinds in s (in their queues, and in any
// queue the jobs enqueue into that already had such a job), until none is
// queued, claimed or running. Retries due later are left retrying. It
// returns what the pool did.
func Drain(t testing.TB, s store.Store, mux *stint.Mux) stint.PoolStats {
	t.Helper()
	ctx := context.Background()
	queues := []string{"default"}
	live, err := s.JobList(ctx, &store.JobListParams{States: []stint.State{stint.Queued, stint.Claimed, stint.Running, stint.CancelRequested}, Limit: store.MaxBatch})
	if err != nil {
		t.Fatalf("stinttest: list jobs: %v", err)
	}
	for _, j := range live {
		if !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	return run(t, s, mux, queues, func() (bool, error) {
		for _, kind := range mux.Kinds() {
			js, err := s.JobList(ctx, &store.JobListParams{Kind: kind, States: []stint.State{stint.Queued, stint.Claimed, stint.Running, stint.CancelRequested}, Limit: 1000})
			if err != nil {
				return false, err
			}
			for _, j := range js {
				if slices.Contains(queues, j.Queue) {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// StartPool starts a pool on s running mux with cfg, and stops it when the
// test ends, failing the test if it cannot stop within Patience.
func StartPool(t testing.TB, s store.Store, mux *stint.Mux, cfg stint.Config) *stint.Pool {
	t.Helper()
	p, stop := startPool(t, s, mux, cfg)
	t.Cleanup(stop)
	return p
}

// startPool starts a pool and returns it with the function that stops it.
func startPool(t testing.TB, s store.Store, mux *stint.Mux, cfg stint.Config) (*stint.Pool, func()) {
	t.Helper()
	p, err := stint.NewPool(s, mux, cfg)
	if err != nil {
		t.Fatalf("stinttest: %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("stinttest: %v", err)
	}
	return p, func() {
		ctx, cancel := context.WithTimeout(context.Background(), Patience)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("stinttest: stop pool %s: %v", cfg.WorkerID, err)
		}
	}
}

func busy(s stint.State) bool {
	return s == stint.Queued || s == stint.Claimed || s == stint.Running || s == stint.CancelRequested
}

// run works queues with a pool until done reports true.
func run(t testing.TB, s store.Store, mux *stint.Mux, queues []string, done func() (bool, error)) stint.PoolStats {
	t.Helper()
	qs := map[string]int{}
	for _, q := range queues {
		qs[q] = stint.DefaultMaxWorkers
	}
	p, stop := startPool(t, s, mux, stint.Config{Queues: qs, WorkerID: "stinttest", Logger: testLogger(t), NoMaintenance: true})
	deadline := time.Now().Add(Patience)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil || (!ok && time.Now().After(deadline)) {
			stop()
			if err == nil {
				err = fmt.Errorf("jobs still unfinished after %s", Patience)
			}
			t.Fatalf("stinttest: %v", err)
		}
		if ok {
			stop() // also waits for the pool's counters to settle
			return p.Stats()
		}
		<-tick.C
	}
}

// testLogger sends the pool's warnings and errors to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
