package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// endpoint is one route of the dashboard's API; {id} is replaced by the
// default tenant's job id (or run id, or outbox message 1).
type endpoint struct {
	method, path, body string
	change             func(v viewerRow) int // the status a change must get; nil for reads
	wholeDB            bool                  // shared by all tenants: a default-tenant admin's only
}

type viewerRow struct {
	name     string
	tenant   string
	role     store.Role
	secret   string
	readOnly bool
}

// TestAuthorizationTable calls every dashboard API endpoint as no token, a
// revoked token, admin, client, worker and reader tokens of the default
// tenant and of another tenant, and an admin of a read-only dashboard, on
// both backends: refusals are 401 and 403 as the API's (a reader reads
// what a client reads and changes nothing); another tenant gets none of
// the default tenant's data and changes none of it.
func TestAuthorizationTable(t *testing.T) {
	t.Parallel()
	backends := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) store.Store { return pgtest.NewStore(t) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dashboardTable(t, open(t))
		})
	}
}

func dashboardTable(t *testing.T, s store.Store) {
	ctx := t.Context()
	marker := "MARKER-default-4c2e"
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "secret.kind", Queue: "secretq", Payload: json.RawMessage(`{"m":"` + marker + `"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	job := res[0].Job.ID
	run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: marker}, Jobs: []store.RunJobSpec{{Name: "a", Spec: lifecycle.Spec{Kind: "secret.kind", Queue: "secretq"}}}})
	if err != nil {
		t.Fatal(err)
	}
	keeper, _ := store.TokensOf(s)
	token := func(tenant string, role store.Role, revoke bool) string {
		tok, secret, err := server.NewToken(tenant, role, tenant+"-"+string(role))
		if err != nil {
			t.Fatal(err)
		}
		if tok, err = keeper.TokenCreate(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if revoke {
			if _, err := keeper.TokenRevoke(ctx, "", tok.ID); err != nil {
				t.Fatal(err)
			}
		}
		return secret
	}
	rows := []viewerRow{{name: "no token"}, {name: "revoked", tenant: server.DefaultTenant, role: store.RoleAdmin, secret: token(server.DefaultTenant, store.RoleAdmin, true)},
		{name: "read-only admin", tenant: server.DefaultTenant, role: store.RoleAdmin, secret: token(server.DefaultTenant, store.RoleAdmin, false), readOnly: true}}
	for _, tenant := range []string{server.DefaultTenant, "acme"} {
		for _, role := range []store.Role{store.RoleAdmin, store.RoleClient, store.RoleWorker, store.RoleReader} {
			rows = append(rows, viewerRow{name: tenant + " " + string(role), tenant: tenant, role: role, secret: token(tenant, role, false)})
		}
	}
	counter := stats.NewCounter(s, stats.Config{})
	if err := counter.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	urls := map[bool]string{}
	for _, ro := range []bool{false, true} {
		h, err := dashboard.New(dashboard.Config{Store: s, Counter: counter, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		urls[ro] = srv.URL
	}
	// A change is refused read-only (403), to a role that may not (403),
	// and answered as not found to another tenant (its job is not there).
	change := func(mayClient bool) func(v viewerRow) int {
		return func(v viewerRow) int {
			switch {
			case v.readOnly, v.role == store.RoleReader, v.role == store.RoleClient && !mayClient:
				return http.StatusForbidden
			case v.tenant != server.DefaultTenant:
				return -2 // refused or a per-item "not found": what changed is checked below
			}
			return 0 // allowed: anything but 401/403
		}
	}
	endpoints := []endpoint{
		{method: "GET", path: "/api/whoami"}, {method: "GET", path: "/api/queues"}, {method: "GET", path: "/api/flow"},
		{method: "GET", path: "/api/unserved"},
		{method: "GET", path: "/api/jobs"}, {method: "GET", path: "/api/jobs/{id}"}, {method: "GET", path: "/api/dlq"},
		{method: "GET", path: "/api/stalled"}, {method: "GET", path: "/api/workers"}, {method: "GET", path: "/api/runs/{run}"},
		{method: "GET", path: "/api/outbox", wholeDB: true},
		{method: "GET", path: "/api/bus", wholeDB: true},
		{method: "GET", path: "/api/runs"}, {method: "GET", path: "/api/history"}, {method: "GET", path: "/api/schedules"},
		{method: "GET", path: "/api/search"}, {method: "GET", path: "/api/search/count"},
		{method: "POST", path: "/api/runs/{run}/cancel", change: change(true)},
		{method: "POST", path: "/api/runs/{run}/rerun", change: change(true)},
		{method: "POST", path: "/api/schedules", body: `{"name":"x","expr":"0 2 * * *","kind":"k"}`, change: change(false)},
		{method: "POST", path: "/api/schedules/sched-default/pause", change: change(false)},
		{method: "POST", path: "/api/schedules/sched-default/resume", change: change(false)},
		{method: "POST", path: "/api/schedules/sched-default/delete", change: change(false)},
		{method: "POST", path: "/api/search/cancel", body: `{"queue":"secretq"}`, change: change(true)},
		{method: "POST", path: "/api/search/replay", body: `{"queue":"secretq"}`, change: change(false)},
		{method: "POST", path: "/api/flow/pause", body: `{"queue":"secretq"}`, change: change(false)},
		{method: "POST", path: "/api/flow/resume", body: `{"queue":"secretq"}`, change: change(false)},
		{method: "POST", path: "/api/jobs/{id}/cancel", change: change(true)},
		{method: "POST", path: "/api/jobs/{id}/replay", change: change(false)},
		{method: "POST", path: "/api/dlq/replay", body: `{"ids":["{id}"]}`, change: change(false)},
		{method: "POST", path: "/api/outbox/1/replay", change: change(false), wholeDB: true},
	}
	var later []func()
	for _, ep := range endpoints {
		for _, v := range rows {
			path := strings.NewReplacer("{id}", job, "{run}", run.Run.ID).Replace(ep.path)
			body := strings.ReplaceAll(ep.body, "{id}", job)
			check := func(t *testing.T) {
				code, reply := dashCall(t, ep.method, urls[v.readOnly]+path, v.secret, body)
				switch want := wantStatus(v, ep); {
				case want > 0 && code != want:
					t.Errorf("%s %s as %s: %d, want %d (%s)", ep.method, ep.path, v.name, code, want, reply)
				case want == 0 && (code == 401 || code == 403):
					t.Errorf("%s %s as %s: refused %d (%s)", ep.method, ep.path, v.name, code, reply)
				}
				if v.tenant == "acme" {
					for _, secret := range []string{marker, job, run.Run.ID, "secret.kind", "secretq"} {
						if strings.Contains(reply, secret) && !strings.Contains(path+body, secret) {
							t.Errorf("%s %s answered acme with the default tenant's %q: %s", ep.method, ep.path, secret, reply)
						}
					}
				}
			}
			name := ep.method + " " + ep.path + "/" + v.name
			if ep.change != nil && v.tenant == server.DefaultTenant && wantStatus(v, ep) == 0 {
				later = append(later, func() { t.Run(name, check) })
				continue
			}
			t.Run(name, check)
		}
	}
	// Nothing the refused or other-tenant calls made changed the default tenant's job or queue.
	if j, err := s.JobGet(ctx, job); err != nil || j.State != lifecycle.Queued {
		t.Errorf("the default tenant's job is %s (%v), want queued", j.State, err)
	}
	qs, _ := store.Queues(s)
	set, _ := qs.QueueSettingsList(ctx)
	for _, q := range set {
		if q.Name == "secretq" && q.Paused {
			t.Error("the default tenant's queue was paused by a refused call")
		}
	}
	for _, f := range later {
		f()
	}
}

func wantStatus(v viewerRow, ep endpoint) int {
	switch {
	case v.secret == "" || v.name == "revoked":
		return http.StatusUnauthorized
	case v.role == store.RoleWorker:
		return http.StatusForbidden
	case ep.wholeDB && (v.role != store.RoleAdmin || v.tenant != server.DefaultTenant) && !v.readOnly:
		return http.StatusForbidden
	case ep.change != nil:
		return ep.change(v)
	}
	return 0
}

func dashCall(t *testing.T, method, url, secret, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	client := &http.Client{Timeout: time.Minute}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}
