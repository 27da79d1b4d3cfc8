package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestSearchAPI searches the fixture's jobs, counts them, and cancels and
// replays a search's result only with a matching confirmed count, as the
// roles allow, reading the store after each change.
func TestSearchAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	admin, client := f.tokens["admin"], f.tokens["client"]
	var found struct {
		Jobs []struct{ ID string } `json:"jobs"`
	}
	if code := f.call(t, "GET", "api/search?kind=poison&state=dead_lettered", admin, "", &found); code != 200 || len(found.Jobs) != 2 {
		t.Fatalf("search: %d, %d jobs; want the 2 dead letters", code, len(found.Jobs))
	}
	var count struct {
		Counts map[string]int `json:"counts"`
	}
	f.call(t, "GET", "api/search/count?kind=poison", admin, "", &count)
	if count.Counts["total"] != 2 || count.Counts["replayable"] != 2 || count.Counts["cancellable"] != 0 {
		t.Errorf("count: %v, want 2 in all, 2 replayable, none cancellable", count.Counts)
	}
	f.call(t, "GET", "api/search?kind=poison", f.tokens["acme"], "", &found)
	if len(found.Jobs) != 0 {
		t.Errorf("tenant acme found %d of the default tenant's jobs", len(found.Jobs))
	}
	for _, q := range []string{"state=sleeping", "path=a%22b&value=1", "value=1", "from=yesterday", "kind=" + long(300), "from=1h&to=2h"} {
		if code := f.call(t, "GET", "api/search?"+q, admin, "", nil); code != http.StatusBadRequest {
			t.Errorf("search %.40s: %d, want 400", q, code)
		}
	}
	// Bulk actions: roles, the confirmed count, the body's shape and size.
	for _, c := range []struct {
		path, token, body string
		want              int
	}{
		{"api/search/replay", client, `{"query": "kind=poison", "expect": 2}`, http.StatusForbidden},
		{"api/search/replay", f.tokens["worker"], `{"query": "kind=poison", "expect": 2}`, http.StatusForbidden},
		{"api/search/replay", admin, `{"query": "kind=poison", "expect": 1}`, http.StatusConflict},
		{"api/search/replay", admin, `{"query": "kind=poison", "expect": 0}`, http.StatusBadRequest},
		{"api/search/replay", admin, `{"query": "kind=poison", "expect": 2, "all": true}`, http.StatusBadRequest},
		{"api/search/replay", admin, `{"query": "` + strings.Repeat("a", 70<<10) + `", "expect": 2}`, http.StatusBadRequest},
		{"api/search/cancel", admin, `{"query": "state=sleeping", "expect": 2}`, http.StatusBadRequest},
	} {
		if code := f.call(t, "POST", c.path, c.token, c.body, nil); code != c.want {
			t.Errorf("POST %s %.60s: %d, want %d", c.path, c.body, code, c.want)
		}
	}
	var done struct {
		Done []string `json:"done"`
	}
	if code := f.call(t, "POST", "api/search/replay", admin, `{"query": "kind=poison", "expect": 2}`, &done); code != 200 || len(done.Done) != 2 {
		t.Fatalf("replay: %d, %v", code, done.Done)
	}
	replays, err := f.s.JobList(ctx, &store.JobListParams{Kind: "poison"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range replays {
		if j.ReplayOf != "" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the store holds %d replays, want 2", n)
	}
	if code := f.call(t, "POST", "api/search/cancel", client, `{"query": "kind=later&queue=other", "expect": 1}`, &done); code != 200 || len(done.Done) != 1 {
		t.Fatalf("cancel: %d, %v", code, done.Done)
	}
	if j, err := f.s.JobGet(ctx, f.queued); err != nil || j.State != lifecycle.Cancelled {
		t.Errorf("the cancelled search's job is %s (%v)", j.State, err)
	}
}

// TestRunsAPI lists a run by name, shows it, cancels it (a client may, as
// on the API) and reruns it, and hides it from another tenant.
func TestRunsAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	v, err := f.s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: "Nightly ETL"}, Jobs: []store.RunJobSpec{
		{Name: "extract", Spec: lifecycle.Spec{Kind: "nobody.step"}},
		{Name: "load", Spec: lifecycle.Spec{Kind: "nobody.step"}, DependsOn: []string{"extract"}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := v.Run.ID
	var list struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if f.call(t, "GET", "api/runs?name=etl&state=queued", f.tokens["client"], "", &list); len(list.Runs) != 1 || list.Runs[0].ID != id {
		t.Errorf("runs named etl: %+v, want %s", list.Runs, id)
	}
	if f.call(t, "GET", "api/runs", f.tokens["acme"], "", &list); len(list.Runs) != 0 {
		t.Errorf("tenant acme lists %+v", list.Runs)
	}
	var page struct {
		Jobs []struct {
			Name string `json:"name"`
		} `json:"jobs"`
		CanCancel bool `json:"can_cancel"`
	}
	if code := f.call(t, "GET", "api/runs/"+id, f.tokens["admin"], "", &page); code != 200 || len(page.Jobs) != 2 || !page.CanCancel {
		t.Errorf("run page: %d %+v", code, page)
	}
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "api/runs/" + id, f.tokens["acme"], "", http.StatusNotFound},
		{"POST", "api/runs/" + id + "/cancel", f.tokens["acme"], "", http.StatusNotFound},
		{"POST", "api/runs/" + id + "/cancel", f.tokens["worker"], "", http.StatusForbidden},
		{"GET", "api/runs?state=paused", f.tokens["admin"], "", http.StatusBadRequest},
		{"GET", "api/runs?name=" + long(300), f.tokens["admin"], "", http.StatusBadRequest},
		{"POST", "api/runs/" + id + "/rerun", f.tokens["admin"], `{"failed_only": "yes"}`, http.StatusBadRequest},
	} {
		if code := f.call(t, c.method, c.path, c.token, c.body, nil); code != c.want {
			t.Errorf("%s %s as %.8s: %d, want %d", c.method, c.path, c.token, code, c.want)
		}
	}
	if code := f.call(t, "POST", "api/runs/"+id+"/cancel", f.tokens["client"], "", nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	if got, err := f.s.RunGet(ctx, id); err != nil || got.Run.State != lifecycle.RunCancelled {
		t.Fatalf("the cancelled run is %s (%v)", got.Run.State, err)
	}
	var rerun struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	if code := f.call(t, "POST", "api/runs/"+id+"/rerun", f.tokens["admin"], `{"failed_only": true}`, &rerun); code != 200 {
		t.Fatalf("rerun: %d", code)
	}
	if got, err := f.s.RunGet(ctx, rerun.Run.ID); err != nil || got.Run.RerunOf != id {
		t.Errorf("the rerun %s: rerun_of %q (%v), want %s", rerun.Run.ID, got.Run.RerunOf, err, id)
	}
}

// TestSchedulesAPI adds, pauses and removes schedules as an admin of each
// tenant, refuses clients and bad input, and reads the store after each.
func TestSchedulesAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	ss, err := store.Schedules(f.s)
	if err != nil {
		t.Fatal(err)
	}
	admin, acme := f.tokens["admin"], f.tokens["acme"]
	for _, c := range []struct {
		token, body string
		want        int
	}{
		{admin, `{"name": "nightly", "expr": "0 2 * * *", "kind": "report", "payload": {"a": 1}}`, 200},
		{f.tokens["client"], `{"name": "c", "expr": "@hourly", "kind": "report"}`, http.StatusForbidden},
		{admin, `{"name": "bad", "expr": "every day", "kind": "report"}`, http.StatusBadRequest},
		{admin, `{"name": "bad", "expr": "@hourly", "time_zone": "Mars/Base", "kind": "report"}`, http.StatusBadRequest},
		{admin, `{"name": "bad", "expr": "@hourly", "kind": "report", "colour": "red"}`, http.StatusBadRequest},
		{admin, `{"name": "` + long(300) + `", "expr": "@hourly", "kind": "report"}`, http.StatusBadRequest},
		{acme, `{"name": "theirs", "expr": "@hourly", "kind": "report", "queue": "other"}`, http.StatusForbidden},
		{acme, `{"name": "theirs", "expr": "@hourly", "kind": "report"}`, http.StatusBadRequest},
		{acme, `{"name": "nightly", "expr": "@hourly", "kind": "report", "queue": "acme/reports"}`, http.StatusConflict},
		{acme, `{"name": "acme-hourly", "expr": "@hourly", "kind": "report", "queue": "acme/reports"}`, 200},
	} {
		if code := f.call(t, "POST", "api/schedules", c.token, c.body, nil); code != c.want {
			t.Errorf("add %.70s: %d, want %d", c.body, code, c.want)
		}
	}
	var list struct {
		Schedules []struct {
			Name string   `json:"name"`
			Next []string `json:"next"`
		} `json:"schedules"`
	}
	f.call(t, "GET", "api/schedules", acme, "", &list)
	if len(list.Schedules) != 1 || list.Schedules[0].Name != "acme-hourly" || len(list.Schedules[0].Next) != 5 {
		t.Errorf("acme's schedules: %+v, want acme-hourly with 5 next fires", list.Schedules)
	}
	if code := f.call(t, "POST", "api/schedules/nightly/pause", acme, "", nil); code != http.StatusNotFound {
		t.Errorf("acme pauses the default tenant's schedule: %d, want 404", code)
	}
	if code := f.call(t, "POST", "api/schedules/nightly/pause", admin, "", nil); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	if s, err := ss.ScheduleGet(ctx, "nightly"); err != nil || !s.Paused || string(s.Payload) != `{"a":1}` && string(s.Payload) != `{"a": 1}` {
		t.Errorf("the paused schedule: %+v (%v)", s, err)
	}
	if code := f.call(t, "POST", "api/schedules/nightly/delete", admin, "", nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if _, err := ss.ScheduleGet(ctx, "nightly"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted schedule: %v, want not found", err)
	}
}

// TestNewEndpointsReadOnly refuses every new change on a read-only dashboard.
func TestNewEndpointsReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	for path, body := range map[string]string{
		"api/schedules":         `{"name": "n", "expr": "@hourly", "kind": "k"}`,
		"api/search/cancel":     `{"query": "kind=later", "expect": 1}`,
		"api/search/replay":     `{"query": "kind=poison", "expect": 2}`,
		"api/runs/x/cancel":     "",
		"api/runs/x/rerun":      `{}`,
		"api/schedules/n/pause": "",
	} {
		if code := f.call(t, "POST", path, f.tokens["admin"], body, nil); code != http.StatusForbidden {
			t.Errorf("POST %s read-only: %d, want 403", path, code)
		}
	}
}
