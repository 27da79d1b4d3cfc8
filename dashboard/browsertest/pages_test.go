package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestPagesInBrowser drives the history, runs, schedules and search pages
// (pages.mjs) in Chromium against a real `stint dev` on SQLite and a real
// `stint server` on PostgreSQL: every action, each followed by a check of
// the store the test makes itself (pages.mjs asks for it over HTTP), an
// accessibility check (axe-core) of every page at desktop and phone width,
// and a page driven by the keyboard alone. With DASHBOARD_DOCS=dir, the
// SQLite run writes the screenshots of docs/dashboard.md there.
func TestPagesInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("the browser test is not short")
	}
	prerequisites(t)
	bin := filepath.Join(t.TempDir(), "stint")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/stint-dev/stint/cmd/stint").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("sqlite-dev", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "stint.db")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		url, token := startStint(t, ctx, bin, []string{"--db", db, "dev", "--api", "127.0.0.1:0", "--shutdown-grace", "0"},
			regexp.MustCompile(`Dashboard: (\S+)#token=(\S+)`), nil)
		open := func(ctx context.Context) (store.Store, error) { return sqlite.OpenStore(ctx, db, sqlite.Options{}) }
		drivePages(t, ctx, open, url, token, os.Getenv("DASHBOARD_DOCS"))
	})
	t.Run("postgres-server", func(t *testing.T) {
		dsn, schema := pgtest.URL(t), pgtest.NewSchema(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		global := []string{"--database-url", dsn, "--schema", schema}
		mint := func() string {
			out, err := exec.CommandContext(ctx, bin, append(global, "tokens", "create", "--role", "admin", "--name", "browser")...).Output()
			if err != nil {
				t.Fatalf("stint tokens create: %v", err)
			}
			return strings.TrimSpace(string(out))
		}
		url, token := startStint(t, ctx, bin, append(global, "server", "--listen", "127.0.0.1:0"),
			regexp.MustCompile(`stint server listening on (\S+)`), mint)
		open := func(ctx context.Context) (store.Store, error) {
			return postgres.OpenStore(ctx, dsn, postgres.Options{Schema: schema})
		}
		drivePages(t, ctx, open, url+"/dashboard/", token, "")
	})
}

// startStint runs bin with args until the test ends and returns the
// dashboard's address and a token: both from the line addr matches, or the
// token from mint once the process is up.
func startStint(t *testing.T, ctx context.Context, bin string, args []string, addr *regexp.Regexp, mint func() string) (string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := addr.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case m := <-found:
		if mint != nil {
			return m[1], mint()
		}
		return m[1], m[2]
	case <-ctx.Done():
		t.Fatalf("stint %v printed no address; stderr:\n%s", args, stderr.String())
		return "", ""
	}
}

// seeded is what drivePages puts in the store before the browser comes.
type seeded struct {
	RunID   string `json:"run_id"`
	Stepped string `json:"stepped"` // a job run as two durable steps
}

// seed writes the jobs the pages work on: five queued jobs of kind
// browser.search (three for customer c-1), two dead letters of kind
// browser.dead, and a run of two steps no worker runs.
func seed(t *testing.T, ctx context.Context, st store.Store) seeded {
	t.Helper()
	var specs []lifecycle.Spec
	for i, c := range []string{"c-1", "c-2", "c-1", "c-2", "c-1"} {
		specs = append(specs, lifecycle.Spec{Kind: "browser.search", Queue: "search", Topic: "billing.invoice",
			Payload: json.RawMessage(fmt.Sprintf(`{"customer": {"id": %q}, "n": %d}`, c, i))})
	}
	if _, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "browser.dead", Queue: "deadq", MaxAttempts: 1}}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := st.JobClaim(ctx, &store.JobClaimParams{WorkerID: "browser-worker", Queues: []string{"deadq"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim a job to fail: %v (%d jobs)", err, len(jobs))
		}
		if _, err := st.JobFail(ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID},
			Error: lifecycle.JobError{Code: "boom", Message: "it broke"}}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := st.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: "browser ETL"}, Jobs: []store.RunJobSpec{
		{Name: "extract", Spec: lifecycle.Spec{Kind: "nobody.step", Queue: "runs"}},
		{Name: "load", Spec: lifecycle.Spec{Kind: "nobody.step", Queue: "runs"}, DependsOn: []string{"extract"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return seeded{RunID: v.Run.ID, Stepped: seedSteps(t, ctx, st)}
}

// seedSteps runs a job of two recorded steps (fetch, then a failed and
// continued charge) through the store, as the step engine would.
func seedSteps(t *testing.T, ctx context.Context, st store.Store) string {
	t.Helper()
	ss, err := store.Steps(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "browser.stepped", Queue: "stepq"}}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.JobClaim(ctx, &store.JobClaimParams{WorkerID: "browser-worker", Queues: []string{"stepq"}, Limit: 1, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim the stepped job: %v (%d jobs)", err, len(jobs))
	}
	own := store.OwnerParams{JobID: jobs[0].ID, LeaseID: jobs[0].LeaseID}
	for i, p := range []store.JobStepParams{
		{Name: "fetch", Kind: store.StepRun, Status: store.StepOK, Output: json.RawMessage(`{"rows": 42}`), DurationMS: 120},
		{Name: "charge", Kind: store.StepRun, Status: store.StepError, Error: &lifecycle.JobError{Code: "card_declined", Message: "declined"}, DurationMS: 40},
	} {
		p.OwnerParams, p.Seq = own, i+1
		if _, _, err := ss.JobStepRecord(ctx, &p); err != nil {
			t.Fatalf("record step %s: %v", p.Name, err)
		}
	}
	if _, err := st.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: own, Result: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return jobs[0].ID
}

// drivePages seeds the store, serves the checks pages.mjs asks for after
// each action, and runs pages.mjs.
func drivePages(t *testing.T, ctx context.Context, open func(context.Context) (store.Store, error), url, token, docs string) {
	t.Helper()
	st, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := seed(t, ctx, st)
	checks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c check
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := c.wait(r.Context(), st); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		t.Logf("store check %s %v: ok", c.What, c.Args)
	}))
	defer checks.Close()
	artifacts, _ := filepath.Abs(filepath.Join("testdata", "artifacts", filepath.Base(t.Name())))
	node := exec.CommandContext(ctx, "node", "pages.mjs")
	node.Env = append(os.Environ(), "DASHBOARD_URL="+url, "TOKEN="+token, "RUN_ID="+s.RunID, "STEPPED_ID="+s.Stepped,
		"CHECK_URL="+checks.URL, "ARTIFACTS="+artifacts, "DOCS="+docs)
	var stderr strings.Builder
	node.Stderr = &stderr
	if out, err := node.Output(); err != nil {
		t.Fatalf("pages.mjs: %v\n%s\n%s\n(screenshots in %s)", err, out, stderr.String(), artifacts)
	}
	t.Logf("screenshots in %s", artifacts)
}

// check is one store check pages.mjs asks for after an action.
type check struct {
	What string            `json:"what"`
	Args map[string]string `json:"args"`
}

// wait polls the store until the check holds, or fails when the request's
// deadline (pages.mjs gives ten seconds) passes.
func (c check) wait(ctx context.Context, st store.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.holds(ctx, st)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store check %s %v: %w", c.What, c.Args, err)
		case <-tick.C:
		}
	}
}

// holds reads the store once for the check.
func (c check) holds(ctx context.Context, st store.Store) error {
	a := c.Args
	switch c.What {
	case "run-cancelled":
		v, err := st.RunGet(ctx, a["run"])
		if err != nil || (v.Run.State != lifecycle.RunCancelled && v.Run.State != lifecycle.RunCancelRequested) {
			return fmt.Errorf("run is %s (%v)", v.Run.State, err)
		}
	case "run-rerun":
		v, err := st.RunGet(ctx, a["rerun"])
		if err != nil || v.Run.RerunOf != a["run"] {
			return fmt.Errorf("rerun_of %q (%v)", v.Run.RerunOf, err)
		}
	case "schedule":
		ss, err := store.Schedules(st)
		if err != nil {
			return err
		}
		s, err := ss.ScheduleGet(ctx, a["name"])
		switch {
		case a["state"] == "removed":
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("still there (%v)", err)
			}
		case err != nil:
			return err
		case s.Expr != a["expr"] || s.Kind != a["kind"] || s.Paused != (a["state"] == "paused"):
			return fmt.Errorf("schedule is %+v", s)
		}
	case "jobs":
		return countJobs(ctx, st, a)
	default:
		return fmt.Errorf("unknown check %q", c.What)
	}
	return nil
}

// countJobs checks that the jobs of a kind in a state (and, with
// replay_of=yes, replays) number a count.
func countJobs(ctx context.Context, st store.Store, a map[string]string) error {
	jobs, err := st.JobList(ctx, &store.JobListParams{Kind: a["kind"], States: []lifecycle.State{lifecycle.State(a["state"])}})
	if err != nil {
		return err
	}
	n := 0
	for _, j := range jobs {
		if a["replay_of"] != "yes" || j.ReplayOf != "" {
			n++
		}
	}
	if fmt.Sprint(n) != a["count"] {
		return fmt.Errorf("%d %s jobs of kind %s, want %s", n, a["state"], a["kind"], a["count"])
	}
	return nil
}
