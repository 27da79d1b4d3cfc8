package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

// fixture is a dashboard on a real SQLite store with real jobs and tokens.
type fixture struct {
	s       store.Store
	url     string
	tokens  map[store.Role]string
	dead    []string // dead-lettered job ids
	queued  string   // a queued job
	counter *stats.Counter
}

func newFixture(t *testing.T, readOnly bool) *fixture {
	t.Helper()
	ctx := context.Background()
	s := stinttest.NewStore(t)
	f := &fixture{s: s, tokens: map[store.Role]string{}}
	keeper, err := store.TokensOf(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []store.Role{store.RoleAdmin, store.RoleClient, store.RoleWorker, store.RoleReader} {
		tok, secret, err := server.NewToken(server.DefaultTenant, role, string(role))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keeper.TokenCreate(ctx, tok); err != nil {
			t.Fatal(err)
		}
		f.tokens[role] = secret
	}
	tok, secret, _ := server.NewToken("acme", store.RoleAdmin, "acme")
	if _, err := keeper.TokenCreate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	f.tokens["acme"] = secret

	mux := stint.NewMux()
	mux.HandleFunc("poison", func(context.Context, *stint.Job) error {
		return stint.DeadLetter(stint.ReasonParseError, errors.New("bad payload"))
	})
	for range 2 {
		if j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "poison"}); j.State != lifecycle.DeadLettered {
			t.Fatalf("poison job ended %s", j.State)
		}
	}
	dead, err := s.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.DeadLettered}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range dead {
		f.dead = append(f.dead, j.ID)
	}
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: "later", Queue: "other"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.queued = res[0].Job.ID

	f.counter = stats.NewCounter(s, stats.Config{})
	if err := f.counter.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := dashboard.New(dashboard.Config{Store: s, Counter: f.counter, ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	mux2 := http.NewServeMux()
	mux2.Handle("/dashboard/", http.StripPrefix("/dashboard", h))
	srv := httptest.NewServer(mux2)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/dashboard/"
	return f
}

// call makes a request with token and decodes the JSON answer into out.
func (f *fixture) call(t *testing.T, method, path, token, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return res.StatusCode
}

func TestAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "stint_nope", http.StatusUnauthorized},
		{"worker token", f.tokens[store.RoleWorker], http.StatusForbidden},
		{"client token", f.tokens[store.RoleClient], http.StatusOK},
		{"admin token", f.tokens[store.RoleAdmin], http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := f.call(t, "GET", "api/jobs", c.token, "", nil); got != c.want {
				t.Errorf("GET api/jobs: %d, want %d", got, c.want)
			}
		})
	}
	// A reader sees the jobs a client sees, may change none of them, and
	// is told so (whoami's can_* hide the buttons).
	var seen, byClient struct{ Jobs []json.RawMessage }
	f.call(t, "GET", "api/jobs", f.tokens[store.RoleReader], "", &seen)
	f.call(t, "GET", "api/jobs", f.tokens[store.RoleClient], "", &byClient)
	if len(seen.Jobs) == 0 || len(seen.Jobs) != len(byClient.Jobs) {
		t.Errorf("a reader sees %d jobs, a client %d", len(seen.Jobs), len(byClient.Jobs))
	}
	var who map[string]any
	f.call(t, "GET", "api/whoami", f.tokens[store.RoleReader], "", &who)
	if who["role"] != "reader" || who["can_cancel"] != false || who["can_replay"] != false || who["can_pause"] != false {
		t.Errorf("whoami as a reader: %v", who)
	}
	for _, path := range []string{"api/jobs/" + f.queued + "/cancel", "api/jobs/" + f.dead[0] + "/replay"} {
		if got := f.call(t, "POST", path, f.tokens[store.RoleReader], "", nil); got != http.StatusForbidden {
			t.Errorf("a reader's POST %s: %d, want 403", path, got)
		}
	}
	// A client may cancel, not replay.
	if got := f.call(t, "POST", "api/jobs/"+f.dead[0]+"/replay", f.tokens[store.RoleClient], "", nil); got != http.StatusForbidden {
		t.Errorf("a client's replay: %d, want 403", got)
	}
	if got := f.call(t, "POST", "api/jobs/"+f.queued+"/cancel", f.tokens[store.RoleClient], "", nil); got != http.StatusOK {
		t.Errorf("a client's cancel: %d, want 200", got)
	}
	// Another tenant sees none of the default tenant's jobs.
	var page struct{ Jobs []json.RawMessage }
	f.call(t, "GET", "api/jobs", f.tokens["acme"], "", &page)
	if len(page.Jobs) != 0 {
		t.Errorf("tenant acme sees %d jobs of the default tenant", len(page.Jobs))
	}
	if got := f.call(t, "GET", "api/jobs/"+f.queued, f.tokens["acme"], "", nil); got != http.StatusNotFound {
		t.Errorf("tenant acme reads a default job: %d, want 404", got)
	}
}

func TestPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	admin := f.tokens[store.RoleAdmin]

	var q stats.Report
	f.call(t, "GET", "api/queues", admin, "", &q)
	if q.Queues["default"].DeadLettered != 2 || q.Queues["other"].Backlog != 1 {
		t.Errorf("queues: %+v", q.Queues)
	}
	var page struct {
		Jobs []store.Job
		Next string
	}
	f.call(t, "GET", "api/jobs?state=dead_lettered&limit=1", admin, "", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].State != lifecycle.DeadLettered || page.Next == "" {
		t.Fatalf("first page of dead letters: %+v", page)
	}
	first := page.Jobs[0].ID
	f.call(t, "GET", "api/jobs?state=dead_lettered&limit=1&after="+page.Next, admin, "", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID == first {
		t.Errorf("second page: %+v", page)
	}
	f.call(t, "GET", "api/jobs?queue=other&kind=later", admin, "", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != f.queued {
		t.Errorf("filter by queue and kind: %+v", page.Jobs)
	}
	f.call(t, "GET", "api/jobs?id="+f.queued, admin, "", &page)
	if len(page.Jobs) != 1 {
		t.Errorf("find by id: %+v", page.Jobs)
	}

	var job struct {
		Job      store.Job
		Events   []store.Event
		Attempts []struct{ Outcome, Error string }
	}
	f.call(t, "GET", "api/jobs/"+f.dead[0], admin, "", &job)
	if len(job.Events) < 3 || len(job.Attempts) != 1 || job.Attempts[0].Outcome != "dead_lettered" || job.Attempts[0].Error == "" {
		t.Errorf("job page: %d events, attempts %+v", len(job.Events), job.Attempts)
	}

	var dlq struct {
		Groups []struct {
			ReasonCode string `json:"reason_code"`
			Count      int
		}
	}
	f.call(t, "GET", "api/dlq", admin, "", &dlq)
	if len(dlq.Groups) != 1 || dlq.Groups[0].Count != 2 || dlq.Groups[0].ReasonCode != stint.ReasonParseError {
		t.Errorf("dlq groups: %+v", dlq.Groups)
	}
	for _, p := range []string{"api/stalled", "api/workers", "api/whoami"} {
		if got := f.call(t, "GET", p, admin, "", nil); got != http.StatusOK {
			t.Errorf("GET %s: %d", p, got)
		}
	}
	for _, p := range []string{"", "app.js", "style.css"} {
		if got := f.call(t, "GET", p, "", "", nil); got != http.StatusOK {
			t.Errorf("GET /dashboard/%s: %d", p, got)
		}
	}
}

func TestCancelAndReplayChangeTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	admin, ctx := f.tokens[store.RoleAdmin], context.Background()
	if got := f.call(t, "POST", "api/jobs/"+f.queued+"/cancel", admin, "", nil); got != http.StatusOK {
		t.Fatalf("cancel: %d", got)
	}
	if j, _ := f.s.JobGet(ctx, f.queued); j.State != lifecycle.Cancelled {
		t.Errorf("after cancel the job is %s", j.State)
	}
	if got := f.call(t, "POST", "api/jobs/no-such-job/cancel", admin, "", nil); got != http.StatusNotFound {
		t.Errorf("cancel of an unknown job: %d, want 404", got)
	}
	var one struct{ Job store.Job }
	f.call(t, "POST", "api/jobs/"+f.dead[0]+"/replay", admin, "", &one)
	if one.Job.ReplayOf != f.dead[0] {
		t.Errorf("replay made %+v", one.Job)
	}
	var bulk struct {
		Replayed []string
		Failed   map[string]string
	}
	if got := f.call(t, "POST", "api/dlq/replay", admin, `{"all":true,"reason_code":"`+stint.ReasonParseError+`"}`, &bulk); got != http.StatusOK {
		t.Fatalf("bulk replay: %d", got)
	}
	// Replay is idempotent while the first replay lives: both come back.
	if len(bulk.Replayed) != 2 || len(bulk.Failed) != 0 {
		t.Errorf("bulk replay: %+v", bulk)
	}
	if got := f.call(t, "POST", "api/dlq/replay", admin, `{}`, nil); got != http.StatusBadRequest {
		t.Errorf("a replay naming nothing: %d, want 400", got)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	admin := f.tokens[store.RoleAdmin]
	var me struct {
		ReadOnly  bool `json:"read_only"`
		CanCancel bool `json:"can_cancel"`
	}
	f.call(t, "GET", "api/whoami", admin, "", &me)
	if !me.ReadOnly || me.CanCancel {
		t.Errorf("whoami: %+v", me)
	}
	if got := f.call(t, "POST", "api/jobs/"+f.queued+"/cancel", admin, "", nil); got != http.StatusForbidden {
		t.Errorf("cancel in read-only mode: %d, want 403", got)
	}
	if j, _ := f.s.JobGet(context.Background(), f.queued); j.State != lifecycle.Queued {
		t.Errorf("read-only cancel changed the job to %s", j.State)
	}
}

// TestRun serves a run's jobs with their dependencies, by step.
func TestRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	v, err := f.s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{ID: "r1"}, Jobs: []store.RunJobSpec{
		{Name: "first", Spec: stint.Spec{Kind: "step"}},
		{Name: "second", Spec: stint.Spec{Kind: "step"}, DependsOn: []string{"first"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	first := v.Jobs[0].JobID
	var run struct{ Jobs []store.Job }
	if got := f.call(t, "GET", "api/runs/r1", f.tokens[store.RoleAdmin], "", &run); got != http.StatusOK {
		t.Fatalf("GET api/runs/r1: %d", got)
	}
	if len(run.Jobs) != 2 || run.Jobs[0].ID != first || len(run.Jobs[1].DependsOn) != 1 || run.Jobs[1].DependsOn[0] != first {
		t.Errorf("run: %+v", run.Jobs)
	}
	if got := f.call(t, "GET", "api/runs/nope", f.tokens[store.RoleAdmin], "", nil); got != http.StatusNotFound {
		t.Errorf("an unknown run: %d, want 404", got)
	}
}
