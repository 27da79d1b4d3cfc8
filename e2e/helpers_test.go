package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// patience bounds every wait: a guard against a hang, never a measure.
const patience = time.Minute

// env is one scenario's world: a store on a fresh database, a client, the
// maintenance services, and the clock everything runs on.
type env struct {
	t       *testing.T
	backend string // "sqlite" or "postgres"
	s       store.Store
	client  *stint.Client
	// clk drives the store, the pools and the services on SQLite; nil on
	// PostgreSQL, where time is real.
	clk *clock.Manual
	// args are the global flags that point the stint command line at the
	// database.
	args []string
	// childEnv points a child process at the database.
	childEnv []string
}

// onBoth runs scenario on SQLite, and on PostgreSQL when
// STINT_TEST_DATABASE_URL is set (skipped without it, failing under CI).
func onBoth(t *testing.T, scenario func(t *testing.T, e *env)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		scenario(t, newSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		scenario(t, newPostgres(t))
	})
}

func newSQLite(t *testing.T) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stint.db")
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Millisecond))
	s, err := sqlite.OpenStore(context.Background(), path, sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	return newEnv(t, &env{t: t, backend: "sqlite", s: s, clk: clk,
		args: []string{"--db", path}, childEnv: []string{envChildSQLite + "=" + path}})
}

func newPostgres(t *testing.T) *env {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.OpenStore(ctx, url, postgres.Options{Schema: schema, MaxConns: 6, Logger: pgtest.Logger})
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	return newEnv(t, &env{t: t, backend: "postgres", s: s,
		args:     []string{"--database-url", url, "--schema", schema},
		childEnv: []string{envChildPGURL + "=" + url, envChildPGSchema + "=" + schema}})
}

// newEnv finishes e: a client, and at cleanup (after the pools and the
// services stop) the checks every scenario ends with, then the store's close.
func newEnv(t *testing.T, e *env) *env {
	t.Helper()
	t.Cleanup(func() { _ = e.s.Close() })
	c, err := stint.NewClient(e.s, stint.ClientConfig{Clock: e.clock(), ActorID: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	e.client = c
	t.Cleanup(e.verify)
	return e
}

// clock is what the pools and the services run on.
func (e *env) clock() clock.Clock {
	if e.clk == nil {
		return clock.System{}
	}
	return e.clk
}

// pick returns sqlite's value on SQLite, pg's on PostgreSQL: a lease, a
// timeout or a deadline, in manual time or in real time.
func (e *env) pick(sqlite, pg time.Duration) time.Duration {
	if e.clk == nil {
		return pg
	}
	return sqlite
}

// now is the store's time, near enough: the manual clock, or the wall clock.
func (e *env) now() time.Time { return e.clock().Now() }

// leaseTTL is the pools' lease: the default on SQLite (time moves when the
// test says so), a few seconds on PostgreSQL.
func (e *env) leaseTTL() time.Duration { return e.pick(stint.DefaultLeaseTTL, 3*time.Second) }

// step is how far until moves the manual clock at a time: a small part of
// a lease, so that however slowly the heartbeater runs (the race detector
// slows SQLite down a lot), it renews leases long before time moving in
// such steps expires them.
func (e *env) step() time.Duration { return e.leaseTTL() / 100 }

// verify runs store.Verify and `stint verify` over the database; both must
// find nothing.
func (e *env) verify() {
	t := e.t
	rep, err := e.s.Verify(context.Background(), &store.VerifyParams{})
	if err != nil {
		t.Errorf("verify: %v", err)
	}
	for _, f := range rep.Findings {
		t.Errorf("verify: job %s: %s", f.JobID, f.Problem)
	}
	if code, out, errOut := e.stint("verify"); code != cli.ExitOK || !strings.Contains(out, " 0 findings") {
		t.Errorf("stint verify exited %d: %s%s", code, out, errOut)
	}
}

// stint runs the command line on the scenario's database.
func (e *env) stint(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), append(slices.Clone(e.args), args...), cli.Env{
		Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" },
	})
	return code, out.String(), errOut.String()
}

// logger discards the pools' and services' logs unless STINT_TEST_LOG is set.
func logger(name string) *slog.Logger {
	if os.Getenv("STINT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("who", name)
	}
	return slog.New(slog.DiscardHandler)
}

// maintain starts the maintenance services, stopped at cleanup. On SQLite
// they run on the manual clock, unelected (one process owns the file); on
// PostgreSQL they are elected through the database and pass often.
func (e *env) maintain() *maintenance.Maintainer {
	e.t.Helper()
	cfg := &maintenance.Config{Clock: e.clock(), Logger: logger("maintenance")}
	if e.clk != nil {
		cfg.SingleNode = true
	} else {
		every := 50 * time.Millisecond
		cfg.Scheduler.Interval, cfg.Reaper.Interval, cfg.Timeouts.Interval, cfg.CancelFinalizer.Interval = every, every, every, every
		cfg.Timeouts.BudgetInterval = every
	}
	m, err := maintenance.New(e.s, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(m.Stop)
	return m
}

// poolConfig is a pool's configuration for a scenario: the scenario's clock
// and lease, no shutdown grace, and on PostgreSQL quick polls and retries.
func (e *env) poolConfig(name string) stint.Config {
	cfg := stint.Config{WorkerID: name, Clock: e.clock(), LeaseTTL: e.leaseTTL(), ShutdownGrace: -1, Logger: logger(name), NoMaintenance: true}
	if e.clk == nil {
		cfg.PollInterval = 100 * time.Millisecond
		cfg.Backoff = lifecycle.Backoff{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	}
	return cfg
}

// startPool starts a pool running h for kind, stopped at cleanup.
func (e *env) startPool(cfg stint.Config, kind string, h stint.HandlerFunc) *stint.Pool {
	e.t.Helper()
	mux := stint.NewMux()
	mux.Handle(kind, h)
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

// until waits for cond. On SQLite it moves the manual clock by step every
// few polls, so that heartbeats, maintenance passes, backoffs, timeouts and
// deadlines come due; on PostgreSQL real time passes.
func (e *env) until(what string, step time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 1; !cond(); i++ {
		if time.Now().After(deadline) {
			e.t.Fatalf("gave up waiting for %s (%s)", what, e.describe())
		}
		if e.clk != nil && i%4 == 0 {
			e.clk.Advance(step)
		}
		<-tick.C
	}
}

// untilState waits until job id is in state, moving time as until does.
func (e *env) untilState(id string, state stint.State, step time.Duration) stint.JobRecord {
	e.t.Helper()
	var j stint.JobRecord
	e.until(fmt.Sprintf("job %s to be %s", id, state), step, func() bool {
		j = e.get(id)
		if j.State.Terminal() && j.State != state {
			e.t.Fatalf("job %s ended %s, want %s; its events: %v", id, j.State, state, types(e.events(id)))
		}
		return j.State == state
	})
	return j
}

// events returns the job's events.
func (e *env) events(id string) []stint.Event {
	e.t.Helper()
	evs, err := e.client.Events(context.Background(), id)
	if err != nil {
		e.t.Fatalf("events of %s: %v", id, err)
	}
	return evs
}

// types lists the types of evs, heartbeats left out (their number depends
// on how time moved).
func types(evs []stint.Event) []lifecycle.EventType {
	var out []lifecycle.EventType
	for _, ev := range evs {
		if ev.Type != lifecycle.EventHeartbeat {
			out = append(out, ev.Type)
		}
	}
	return out
}

// wantTypes fails the test unless the job's events, heartbeats left out,
// are want.
func (e *env) wantTypes(id string, want ...lifecycle.EventType) []stint.Event {
	e.t.Helper()
	evs := e.events(id)
	if got := types(evs); !slices.Equal(got, want) {
		e.t.Errorf("job %s has events %v, want %v", id, got, want)
	}
	return evs
}

// lastEvent returns the job's last event of type typ.
func lastEvent(evs []stint.Event, typ lifecycle.EventType) stint.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return evs[i]
		}
	}
	return stint.Event{}
}

// eventError is the error an event's details record (failures, timeouts,
// dead letters).
func eventError(ev stint.Event) lifecycle.JobError {
	var d struct {
		Error lifecycle.JobError `json:"error"`
	}
	_ = json.Unmarshal(ev.Details, &d)
	return d.Error
}

// gate is a handler that reports each start and then waits to be let go:
// by its context (unless it ignores it) or by release. It records the
// cause its context was cancelled with.
type gate struct {
	started   chan *stint.Job
	release   chan struct{}
	ignoreCtx bool

	mu     sync.Mutex
	causes []error
	once   sync.Once
}

// newGate returns a gate that lets its handlers go at cleanup at the latest.
func (e *env) newGate(ignoreCtx bool) *gate {
	g := &gate{started: make(chan *stint.Job, 64), release: make(chan struct{}), ignoreCtx: ignoreCtx}
	e.t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) work(ctx context.Context, j *stint.Job) error {
	g.started <- j
	if g.ignoreCtx {
		<-g.release
		return nil
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		g.causes = append(g.causes, context.Cause(ctx))
		g.mu.Unlock()
		return fmt.Errorf("gave up: %w", context.Cause(ctx))
	}
}

func (g *gate) cause() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.causes) == 0 {
		return nil
	}
	return g.causes[len(g.causes)-1]
}

// awaitStart waits for the gate's next start.
func (e *env) awaitStart(g *gate) *stint.Job {
	e.t.Helper()
	select {
	case j := <-g.started:
		return j
	case <-time.After(patience):
		e.t.Fatal("gave up waiting for a handler to start")
		return nil
	}
}

// describe says where every job stands, for a failure message.
func (e *env) describe() string {
	jobs, err := e.s.JobList(context.Background(), &store.JobListParams{Limit: 100})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	if e.clk != nil {
		fmt.Fprintf(&b, "clock %s;", e.clk.Now().Format(time.RFC3339Nano))
	}
	for _, j := range jobs {
		fmt.Fprintf(&b, " job %s %s attempt %d run_at %s lease %v events %v;", j.ID, j.State, j.Attempt,
			j.RunAt.Format(time.RFC3339Nano), j.LeaseExpiresAt, types(e.events(j.ID)))
	}
	return b.String()
}
