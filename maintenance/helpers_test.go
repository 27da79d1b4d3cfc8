package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// patience is how long a test waits for a signal before it fails: a bound
// on a hang, never a timing assertion.
const patience = 30 * time.Second

// t0 is the tests' time zero.
var t0 = time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)

// db is one test's database, with the manual clock the test moves.
type db struct {
	t     *testing.T
	kind  string // "sqlite" or "postgres"
	clock *clock.Manual
	s     store.Store // the first store opened on it
	// open returns another store on the same database, closed at cleanup.
	open func() store.Store
	// stub is set when the store's clock cannot be set (PostgreSQL's now()):
	// services then pass the manual clock's time to the store.
	stub bool
	// env tells a child process how to open this database.
	env []string
}

// onBoth runs f as a subtest on SQLite and on PostgreSQL; the PostgreSQL one
// is skipped without STINT_TEST_DATABASE_URL (and fails under CI).
func onBoth(t *testing.T, f func(t *testing.T, d *db)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, newSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, newPostgres(t))
	})
}

func newSQLite(t *testing.T) *db {
	path := filepath.Join(t.TempDir(), "stint.db")
	d := &db{t: t, kind: "sqlite", clock: clock.NewManual(t0), env: []string{"STINT_HELPER_SQLITE=" + path}}
	d.open = func() store.Store {
		s, err := sqlite.OpenStore(context.Background(), path, sqlite.Options{Clock: d.clock})
		if err != nil {
			t.Fatalf("open sqlite store: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	d.s = d.open()
	return d
}

var quiet = slog.New(slog.DiscardHandler)

func newPostgres(t *testing.T) *db {
	url := pgtest.URL(t)
	schema := pgtest.NewSchema(t)
	d := &db{t: t, kind: "postgres", clock: clock.NewManual(t0), stub: true,
		env: []string{"STINT_HELPER_POSTGRES=" + url, "STINT_HELPER_SCHEMA=" + schema}}
	d.open = func() store.Store {
		s, err := postgres.OpenStore(context.Background(), url, postgres.Options{Schema: schema, Logger: quiet})
		if err != nil {
			t.Fatalf("open postgres store: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	d.s = d.open()
	return d
}

// logger writes to the test's output, shown on failure or with -v.
func (d *db) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(d.t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// now is the Now the test's own store calls pass: the manual clock's time.
func (d *db) now() *time.Time {
	t := d.clock.Now()
	return &t
}

// nowFor is what services pass to the store on this database.
func (d *db) nowFor() nowFunc {
	if d.stub {
		return clockNow(d.clock)
	}
	return storeNow
}

func (d *db) enqueue(spec lifecycle.Spec) lifecycle.Job {
	d.t.Helper()
	if spec.Kind == "" {
		spec.Kind = "test"
	}
	res, err := d.s.JobEnqueue(d.t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, Now: d.now()})
	if err != nil {
		d.t.Fatalf("enqueue: %v", err)
	}
	return res[0].Job
}

// claim claims the one queued job of the default queue, started when start is set.
func (d *db) claim(ttl time.Duration, start bool) lifecycle.Job {
	d.t.Helper()
	jobs, err := d.s.JobClaim(d.t.Context(), &store.JobClaimParams{
		WorkerID: "w1", Queues: []string{lifecycle.DefaultQueue}, Limit: 1, LeaseTTL: ttl, Start: start, Now: d.now(),
	})
	if err != nil || len(jobs) != 1 {
		d.t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	return jobs[0]
}

func (d *db) get(id string) lifecycle.Job {
	d.t.Helper()
	j, err := d.s.JobGet(d.t.Context(), id)
	if err != nil {
		d.t.Fatalf("get %s: %v", id, err)
	}
	return j
}

// events returns the types of a job's events, in order.
func (d *db) events(id string) []lifecycle.EventType {
	d.t.Helper()
	evs, err := d.s.JobEvents(d.t.Context(), id)
	if err != nil {
		d.t.Fatalf("events of %s: %v", id, err)
	}
	out := make([]lifecycle.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// verify fails the test unless store.Verify finds every job consistent with
// its events.
func (d *db) verify() {
	d.t.Helper()
	rep, err := d.s.Verify(d.t.Context(), &store.VerifyParams{})
	if err != nil {
		d.t.Fatalf("verify: %v", err)
	}
	if len(rep.Findings) > 0 {
		d.t.Errorf("verify: %d findings over %d jobs: %+v", len(rep.Findings), rep.Jobs, rep.Findings)
	}
}

// wantState fails unless the job is in state with the given reason code.
func (d *db) wantState(id string, state lifecycle.State, reasonCode string) lifecycle.Job {
	d.t.Helper()
	j := d.get(id)
	if j.State != state || j.ReasonCode != reasonCode {
		d.t.Fatalf("job %s is %s (reason %q), want %s (reason %q)", id, j.State, j.ReasonCode, state, reasonCode)
	}
	return j
}

func (d *db) wantEvents(id string, want ...lifecycle.EventType) {
	d.t.Helper()
	if got := d.events(id); !slices.Equal(got, want) {
		d.t.Fatalf("events of %s: %v, want %v", id, got, want)
	}
}

// watch makes l report each pass on the returned channel; call it before Start.
func watch(l *loop) <-chan passResult {
	l.passed = make(chan passResult)
	return l.passed
}

// recv returns the next value on ch, failing the test after patience.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("no %s within %s", what, patience)
		panic("unreachable")
	}
}

// nextPass waits for the next pass and fails the test if it failed.
func nextPass(t *testing.T, ch <-chan passResult) int {
	t.Helper()
	r := recv(t, ch, "maintenance pass")
	if r.err != nil {
		t.Fatalf("pass failed: %v", r.err)
	}
	return r.n
}

// starter is any service.
type starter interface {
	Start(context.Context) error
	Stop()
}

// start starts s and stops it when the test ends.
func start(t *testing.T, s starter) {
	t.Helper()
	if err := s.Start(t.Context()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(s.Stop)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}
