package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// result is what one run of the command line produced.
type result struct {
	code           int
	stdout, stderr string
}

// stint runs the command line in-process against the SQLite file db, with
// an empty environment and the system clock.
func stint(t *testing.T, db string, args ...string) result {
	t.Helper()
	return stintEnv(t, cli.Env{}, append([]string{"--db", db}, args...)...)
}

// stintEnv runs the command line with env; unset Getenv means an empty
// environment, so the tests never read the developer's STINT_* variables.
func stintEnv(t *testing.T, env cli.Env, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env.Stdout, env.Stderr = &out, &errb
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	code := cli.Main(t.Context(), args, env)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok fails the test unless r succeeded with nothing on stderr.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != cli.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q; want exit 0 and no stderr", r.code, r.stderr, r.stdout)
	}
	return r
}

// usageError fails the test unless r is a usage error: exit 2, nothing on
// stdout, one line on stderr containing want.
func (r result) usageError(t *testing.T, want string) {
	t.Helper()
	r.failed(t, cli.ExitUsage, want)
}

// notFound fails the test unless r says that what it named does not exist:
// exit 4, nothing on stdout, one line on stderr containing want.
func (r result) notFound(t *testing.T, want string) {
	t.Helper()
	r.failed(t, cli.ExitNotFound, want)
}

func (r result) failed(t *testing.T, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || !strings.HasPrefix(r.stderr, "stint: ") {
		t.Errorf("stderr %q, want one line starting with \"stint: \"", r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want it to mention %q", r.stderr, want)
	}
}

// newDB returns the path of a SQLite file that does not exist yet.
func newDB(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "stint.db")
}

// migratedDB returns the path of a new SQLite database made by `stint
// migrate`, as a user makes one before enqueueing into it.
func migratedDB(t *testing.T) string {
	t.Helper()
	db := newDB(t)
	stint(t, db, "migrate").ok(t)
	return db
}

// withStore opens the SQLite store at db, runs fn and closes it before the
// command line touches the file.
func withStore(t *testing.T, db string, fn func(ctx context.Context, st store.Store)) {
	t.Helper()
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fn(t.Context(), st)
}

// seeded is a database holding one job in each of a few states.
type seeded struct {
	db                               string
	queued, running, done, scheduled string
}

// newSeeded creates a database with a queued job (kind "mail"), a running
// job and a succeeded job (kind "report", queue "batch"), and a scheduled job.
func newSeeded(t *testing.T) seeded {
	t.Helper()
	s := seeded{db: newDB(t)}
	withStore(t, s.db, func(ctx context.Context, st store.Store) {
		s.done = mustEnqueue(t, st, lifecycle.Spec{Kind: "report", Queue: "batch"}).ID
		s.running = mustEnqueue(t, st, lifecycle.Spec{Kind: "report", Queue: "batch"}).ID
		runAt := time.Now().Add(time.Hour)
		s.scheduled = mustEnqueue(t, st, lifecycle.Spec{Kind: "mail", RunAt: &runAt}).ID
		claimed := mustClaim(t, st, "batch", 2)
		res, err := st.JobComplete(ctx, []store.JobCompleteParams{{
			OwnerParams: store.OwnerParams{JobID: s.done, LeaseID: leaseOf(claimed, s.done)},
			Result:      json.RawMessage(`{"pages": 3}`),
		}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("complete: %v, %v", err, res)
		}
		s.queued = mustEnqueue(t, st, lifecycle.Spec{Kind: "mail", Payload: json.RawMessage(`{"to": "ada"}`)}).ID
	})
	return s
}

func mustEnqueue(t *testing.T, st store.Store, spec lifecycle.Spec) lifecycle.Job {
	t.Helper()
	res, err := st.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Job
}

// mustClaim claims and starts n jobs of queue.
func mustClaim(t *testing.T, st store.Store, queue string, n int) []lifecycle.Job {
	t.Helper()
	jobs, err := st.JobClaim(t.Context(), &store.JobClaimParams{
		WorkerID: "w1", Queues: []string{queue}, Limit: n, LeaseTTL: time.Hour, Start: true,
	})
	if err != nil || len(jobs) != n {
		t.Fatalf("claim: %d jobs, %v; want %d", len(jobs), err, n)
	}
	return jobs
}

func leaseOf(jobs []lifecycle.Job, id string) string {
	for _, j := range jobs {
		if j.ID == id {
			return j.LeaseID
		}
	}
	return ""
}

func getJob(t *testing.T, db, id string) lifecycle.Job {
	t.Helper()
	var j lifecycle.Job
	withStore(t, db, func(ctx context.Context, st store.Store) {
		var err error
		if j, err = st.JobGet(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	return j
}

// rawDB opens the SQLite file directly, bypassing the store.
func rawDB(t *testing.T, db string, readOnly bool) *sql.DB {
	t.Helper()
	dsn := "file:" + (&url.URL{Path: db}).EscapedPath()
	if readOnly {
		dsn += "?mode=ro"
	}
	d, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// dump returns every job and event row of db, to show that a command
// changed nothing.
func dump(t *testing.T, db string) string {
	t.Helper()
	d := rawDB(t, db, true)
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || ' ' || rev || ' ' || state || ' ' || updated_at FROM jobs ORDER BY id`,
		`SELECT id || ' ' || job_id || ' ' || rev FROM job_events ORDER BY id`,
	} {
		rows, err := d.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, s)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// fixedClock is a manual clock at a round time, for stable output.
func fixedClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}
