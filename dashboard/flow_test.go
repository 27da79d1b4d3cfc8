package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/tracing"
)

// flowAnswer is the JSON of GET api/flow.
type flowAnswer struct {
	Supported bool `json:"supported"`
	CanPause  bool `json:"can_pause"`
	Queues    []struct {
		Name         string         `json:"name"`
		Paused       bool           `json:"paused"`
		MaxRunning   int            `json:"max_running"`
		Running      int            `json:"running"`
		RateLimit    int            `json:"rate_limit"`
		RateInterval float64        `json:"rate_interval_seconds"`
		RateUsed     int            `json:"rate_used"`
		RateWindow   *time.Time     `json:"rate_window"`
		KeyLimit     int            `json:"key_limit"`
		FairTenants  bool           `json:"fair_tenants"`
		Weights      map[string]int `json:"weights"`
	} `json:"queues"`
}

// TestFlowShowsLimitsAndTheirUse serves a limited queue's settings with the
// starts of its current rate window.
func TestFlowShowsLimitsAndTheirUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	qs, err := store.Queues(f.s)
	if err != nil {
		t.Fatal(err)
	}
	maxRunning, rate, per, keys, fair := 3, 1000, time.Hour, 2, true
	if _, err := qs.QueueLimit(ctx, "limited", store.QueueLimits{MaxRunning: &maxRunning, RateLimit: &rate,
		RateInterval: &per, KeyLimit: &keys, FairTenants: &fair, Weights: map[string]int{"acme": 3}}); err != nil {
		t.Fatal(err)
	}
	mux := stint.NewMux()
	mux.HandleFunc("fast", func(context.Context, *stint.Job) error { return nil })
	if j := stinttest.WorkOne(t, f.s, mux, stint.Spec{Kind: "fast", Queue: "limited"}); j.State != lifecycle.Succeeded {
		t.Fatalf("fast job ended %s", j.State)
	}

	var got flowAnswer
	if code := f.call(t, "GET", "api/flow", f.tokens[store.RoleAdmin], "", &got); code != http.StatusOK {
		t.Fatalf("GET api/flow: %d", code)
	}
	if !got.Supported || !got.CanPause || len(got.Queues) != 1 {
		t.Fatalf("api/flow: %+v, want the one limited queue, pausable by an admin", got)
	}
	q := got.Queues[0]
	if q.Name != "limited" || q.Paused || q.MaxRunning != 3 || q.Running != 0 || q.RateLimit != 1000 ||
		q.RateInterval != 3600 || q.RateUsed != 1 || q.RateWindow == nil || q.KeyLimit != 2 || !q.FairTenants || q.Weights["acme"] != 3 {
		t.Errorf("limited queue: %+v", q)
	}

	// Another tenant sees none of the default tenant's queues.
	var acme flowAnswer
	f.call(t, "GET", "api/flow", f.tokens["acme"], "", &acme)
	if len(acme.Queues) != 0 {
		t.Errorf("acme sees %+v", acme.Queues)
	}
}

// TestPauseByRole lets an admin pause and resume a queue from the page, and
// refuses a client, a read-only dashboard and another tenant's queue.
func TestPauseByRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	paused := func(t *testing.T) bool {
		t.Helper()
		var got flowAnswer
		f.call(t, "GET", "api/flow", f.tokens[store.RoleAdmin], "", &got)
		for _, q := range got.Queues {
			if q.Name == "other" {
				return q.Paused
			}
		}
		return false
	}
	body := `{"queue": "other"}`
	cases := []struct {
		name, token, path, body string
		want                    int
		paused                  bool
	}{
		{"client cannot pause", f.tokens[store.RoleClient], "api/flow/pause", body, http.StatusForbidden, false},
		{"worker cannot use the dashboard", f.tokens[store.RoleWorker], "api/flow/pause", body, http.StatusForbidden, false},
		{"another tenant's queue is not found", f.tokens["acme"], "api/flow/pause", body, http.StatusNotFound, false},
		{"no queue named", f.tokens[store.RoleAdmin], "api/flow/pause", `{}`, http.StatusBadRequest, false},
		{"admin pauses", f.tokens[store.RoleAdmin], "api/flow/pause", body, http.StatusOK, true},
		{"client cannot resume", f.tokens[store.RoleClient], "api/flow/resume", body, http.StatusForbidden, true},
		{"admin resumes", f.tokens[store.RoleAdmin], "api/flow/resume", body, http.StatusOK, false},
	}
	// In order: each case starts from the state the one before left.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := f.call(t, "POST", c.path, c.token, c.body, nil); got != c.want {
				t.Errorf("POST %s: %d, want %d", c.path, got, c.want)
			}
			if got := paused(t); got != c.paused {
				t.Errorf("paused %t, want %t", got, c.paused)
			}
		})
	}

	var client flowAnswer
	f.call(t, "GET", "api/flow", f.tokens[store.RoleClient], "", &client)
	if client.CanPause {
		t.Error("a client token is offered the pause buttons")
	}
}

// TestReadOnlyOffersNoPause hides the buttons and refuses the pause.
func TestReadOnlyOffersNoPause(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	admin := f.tokens[store.RoleAdmin]
	var got flowAnswer
	f.call(t, "GET", "api/flow", admin, "", &got)
	var me struct {
		CanPause bool `json:"can_pause"`
	}
	f.call(t, "GET", "api/whoami", admin, "", &me)
	if got.CanPause || me.CanPause {
		t.Errorf("read-only dashboard offers pause: flow %t, whoami %t", got.CanPause, me.CanPause)
	}
	if code := f.call(t, "POST", "api/flow/pause", admin, `{"queue": "other"}`, nil); code != http.StatusForbidden {
		t.Errorf("pause in read-only mode: %d, want 403", code)
	}
	f.call(t, "GET", "api/flow", admin, "", &got)
	if len(got.Queues) != 0 {
		t.Errorf("read-only pause changed the queues: %+v", got.Queues)
	}
}

// TestFlowThroughWrappers reaches the queue controls of a store wrapped for
// traces, as stint dev and stint server wrap theirs.
func TestFlowThroughWrappers(t *testing.T) {
	t.Parallel()
	s := stinttest.NewStore(t)
	counter := stats.NewCounter(s, stats.Config{})
	if err := counter.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, err := dashboard.New(dashboard.Config{Store: tracing.Store(s, noop.NewTracerProvider()), Counter: counter, NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+"/api/flow/pause", "application/json", strings.NewReader(`{"queue": "email"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var got flowAnswer
	if res, err = http.Get(srv.URL + "/api/flow"); err == nil {
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !got.Supported || len(got.Queues) != 1 || !got.Queues[0].Paused {
		t.Errorf("through the tracing wrapper: %+v", got)
	}
}
