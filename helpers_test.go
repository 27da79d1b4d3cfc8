package stint_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// patience bounds how long a test waits for a condition: a guard against a
// hang, never a timing assertion.
const patience = time.Minute

// t0 is the SQLite tests' time zero.
var t0 = time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)

// env is one test's store, the manual clock the test moves, and a client.
type env struct {
	t      *testing.T
	kind   string // "sqlite" or "postgres"
	clk    *clock.Manual
	s      store.Store
	client *stint.Client
}

// newSQLite opens a store on a fresh SQLite file whose clock is the
// test's manual clock, and checks at cleanup that verify finds nothing.
func newSQLite(t *testing.T) *env {
	t.Helper()
	clk := clock.NewManual(t0)
	s, err := sqlite.OpenStore(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatalf("open sqlite store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return newEnv(t, "sqlite", clk, s)
}

// newPostgres opens a store on a fresh PostgreSQL schema. Its clock is the
// database's; the manual clock starts at the wall clock's second so that
// times the pool computes (a retry-after) are near the database's.
func newPostgres(t *testing.T) *env {
	t.Helper()
	s := pgtest.NewStore(t)
	return newEnv(t, "postgres", clock.NewManual(time.Now().UTC().Truncate(time.Second)), s)
}

func newEnv(t *testing.T, kind string, clk *clock.Manual, s store.Store) *env {
	c, err := stint.NewClient(s, stint.ClientConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, kind: kind, clk: clk, s: s, client: c}
	t.Cleanup(e.verify)
	return e
}

// onBoth runs f on SQLite and on PostgreSQL (skipped without
// STINT_TEST_DATABASE_URL, failing under CI).
func onBoth(t *testing.T, f func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, newSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, newPostgres(t))
	})
}

// verify fails the test when the store's event logs disagree with its jobs.
func (e *env) verify() {
	rep, err := e.s.Verify(context.Background(), &store.VerifyParams{})
	if err != nil {
		e.t.Errorf("verify: %v", err)
		return
	}
	for _, f := range rep.Findings {
		e.t.Errorf("verify: job %s: %s", f.JobID, f.Problem)
	}
}

// logger discards the pools' logs unless STINT_TEST_LOG is set.
func logger() *slog.Logger {
	if os.Getenv("STINT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// config is a pool config for tests: the env's clock, no shutdown grace,
// and a backoff of a millisecond, so that on PostgreSQL (whose clock the
// test cannot move) a promoted retry is claimable at once.
func (e *env) config() stint.Config {
	return stint.Config{Clock: e.clk, Logger: logger(), ShutdownGrace: -1, LeaseTTL: 60 * time.Second, NoMaintenance: true,
		Backoff: lifecycle.Backoff{Base: time.Millisecond, Max: time.Millisecond}}
}

// start starts a pool with mux and cfg, stopped at cleanup.
func (e *env) start(mux *stint.Mux, cfg stint.Config) *stint.Pool {
	e.t.Helper()
	return stinttest.StartPool(e.t, e.s, mux, cfg)
}

func (e *env) enqueue(spec stint.Spec) stint.JobRecord {
	e.t.Helper()
	res, err := e.client.Enqueue(context.Background(), spec)
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	return res.Job
}

func (e *env) get(id string) stint.JobRecord {
	e.t.Helper()
	j, err := e.client.Get(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return j
}

// waitState waits until job id is in one of states and returns it.
func (e *env) waitState(id string, states ...stint.State) stint.JobRecord {
	e.t.Helper()
	var j stint.JobRecord
	eventually(e.t, "job in state "+stateList(states), func() bool {
		j = e.get(id)
		for _, s := range states {
			if j.State == s {
				return true
			}
		}
		return false
	}, func() string { return "it is " + string(j.State) })
	return j
}

// now is the store's time: the manual clock on SQLite, the wall clock
// (close to the database's) on PostgreSQL.
func (e *env) now() time.Time {
	if e.kind == "postgres" {
		return time.Now()
	}
	return e.clk.Now()
}

// promote moves every retrying job to queued, as the scheduler would once
// its backoff has passed: on SQLite the clock moves past the backoff; on
// PostgreSQL the store is asked as of two minutes from now (and the job is
// claimable once the database's clock reaches its run_at).
func (e *env) promote() {
	e.t.Helper()
	var at *time.Time
	if e.kind == "postgres" {
		at = ptr(time.Now().Add(2 * time.Minute))
	} else {
		e.clk.Advance(2 * time.Minute)
	}
	if _, err := e.s.JobPromoteDue(context.Background(), &store.MaintainParams{Now: at}); err != nil {
		e.t.Fatalf("promote: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func (e *env) events(id string) []lifecycle.EventType {
	e.t.Helper()
	evs, err := e.client.Events(context.Background(), id)
	if err != nil {
		e.t.Fatalf("events %s: %v", id, err)
	}
	out := make([]lifecycle.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// advanceUntil moves the clock by step until cond holds, giving the pool's
// goroutines a moment to react after each step. It never moves the clock to
// within step+1s of a live lease's expiry: a test must not outrun the
// heartbeats (a busy machine would then see a lost lease where the test
// means something else); the heartbeater renews the lease, and the clock
// moves on.
func (e *env) advanceUntil(step time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; !cond(); i++ {
		if time.Now().After(deadline) {
			e.t.Fatalf("gave up waiting for %s", what)
		}
		if i%5 == 0 && e.leasesLast(step+time.Second) {
			e.clk.Advance(step)
		}
		<-tick.C
	}
}

// leasesLast reports whether every live lease lasts longer than d from now.
func (e *env) leasesLast(d time.Duration) bool {
	e.t.Helper()
	live, err := e.s.JobList(context.Background(), &store.JobListParams{States: []stint.State{stint.Claimed, stint.Running, stint.CancelRequested}})
	if err != nil {
		e.t.Fatalf("list leased jobs: %v", err)
	}
	for _, j := range live {
		if j.LeaseExpiresAt.Sub(e.now()) <= d {
			return false
		}
	}
	return true
}

// eventually polls cond until it holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool, why ...func() string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, w := range why {
				msg = ": " + w()
			}
			t.Fatalf("gave up waiting for %s%s", what, msg)
		}
		<-tick.C
	}
}

// receive waits for a value on ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

func stateList(ss []stint.State) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += "|"
		}
		out += string(s)
	}
	return out
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// blocker is a handler that reports its start, then waits: for a value to
// return, or for its context to end (it then reports the cause and still
// waits for the value, so a test decides what it returns).
type blocker struct {
	started chan *stint.Job
	causes  chan error
	release chan error
	// ignoreCtx makes it wait for release only, like a handler that never
	// looks at its context.
	ignoreCtx bool
}

func newBlocker() *blocker {
	return &blocker{started: make(chan *stint.Job, 16), causes: make(chan error, 16), release: make(chan error, 16)}
}

func (b *blocker) Work(ctx context.Context, j *stint.Job) error {
	b.started <- j
	if b.ignoreCtx {
		return <-b.release
	}
	select {
	case err := <-b.release:
		return err
	case <-ctx.Done():
		b.causes <- context.Cause(ctx)
		return <-b.release
	}
}

// muxOf returns a Mux with h registered for kind.
func muxOf(kind string, h stint.Handler) *stint.Mux {
	m := stint.NewMux()
	m.Handle(kind, h)
	return m
}

// quietLogger is a logger that discards everything, for examples.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
