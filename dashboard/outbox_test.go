package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

type outboxPage struct {
	Pending   []store.OutboxMessage `json:"pending"`
	Failed    []store.OutboxMessage `json:"failed"`
	Dead      []store.OutboxMessage `json:"dead"`
	CanReplay bool                  `json:"can_replay"`
}

// withOutbox gives f's store real webhooks and messages in every status:
// one dead (its receiver refuses for good), one failed and retrying (its
// receiver is down), and pending ones not yet tried.
func (f *fixture) withOutbox(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	hook := func(status int) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
		t.Cleanup(srv.Close)
		if _, err := f.s.WebhookAdd(ctx, store.Webhook{URL: srv.URL, Secret: "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
			EventTypes: []string{"succeeded"}}); err != nil {
			t.Fatal(err)
		}
	}
	mux := stint.NewMux()
	mux.HandleFunc("ok", func(context.Context, *stint.Job) error { return nil })
	work := func() {
		if j := stinttest.WorkOne(t, f.s, mux, stint.Spec{Kind: "ok"}); j.State != lifecycle.Succeeded {
			t.Fatalf("ok job ended %s", j.State)
		}
	}
	hook(http.StatusBadRequest)
	hook(http.StatusServiceUnavailable)
	work()
	d, err := outbox.New(f.s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Pass(ctx); err != nil || n != 2 {
		t.Fatalf("Pass: %d messages, %v; want 2", n, err)
	}
	hook(http.StatusOK)
	work() // three new messages, none tried
}

func TestOutboxPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.withOutbox(t)
	for _, who := range []store.Role{store.RoleClient, "acme"} {
		if got := f.call(t, "GET", "api/outbox", f.tokens[who], "", nil); got != http.StatusForbidden {
			t.Errorf("%s reads the outbox: %d, want 403 (the outbox is not a tenant's)", who, got)
		}
	}
	var p outboxPage
	if got := f.call(t, "GET", "api/outbox", f.tokens[store.RoleAdmin], "", &p); got != http.StatusOK {
		t.Fatalf("GET api/outbox: %d", got)
	}
	if len(p.Dead) != 1 || len(p.Failed) != 1 || len(p.Pending) != 3 || !p.CanReplay {
		t.Fatalf("outbox page: %d dead, %d failed, %d pending, can_replay %v; want 1, 1, 3, true", len(p.Dead), len(p.Failed), len(p.Pending), p.CanReplay)
	}
	if m := p.Failed[0]; m.LastError == "" || m.NextAttemptAt.IsZero() || m.Attempts != 1 {
		t.Errorf("failed message shows no last error, next attempt or attempts: %+v", m)
	}
	dead := strconv.FormatInt(p.Dead[0].ID, 10)
	for _, who := range []store.Role{store.RoleClient, "acme"} {
		if got := f.call(t, "POST", "api/outbox/"+dead+"/replay", f.tokens[who], "", nil); got != http.StatusForbidden {
			t.Errorf("%s replays an outbox message: %d, want 403", who, got)
		}
	}
	for path, want := range map[string]int{
		"api/outbox/nope/replay":   http.StatusBadRequest,
		"api/outbox/999999/replay": http.StatusNotFound,
		"api/outbox/" + strconv.FormatInt(p.Failed[0].ID, 10) + "/replay": http.StatusConflict,
	} {
		if got := f.call(t, "POST", path, f.tokens[store.RoleAdmin], "", nil); got != want {
			t.Errorf("POST %s: %d, want %d", path, got, want)
		}
	}
	var m store.OutboxMessage
	if got := f.call(t, "POST", "api/outbox/"+dead+"/replay", f.tokens[store.RoleAdmin], "", &m); got != http.StatusOK || m.State != store.OutboxPending {
		t.Fatalf("admin replay: %d, message %s; want 200, pending", got, m.State)
	}
	if got := f.call(t, "GET", "api/outbox", f.tokens[store.RoleAdmin], "", &p); got != http.StatusOK || len(p.Dead) != 0 {
		t.Errorf("after replay: %d, %d dead; want 200, 0", got, len(p.Dead))
	}
}

func TestOutboxReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.withOutbox(t)
	var p outboxPage
	if got := f.call(t, "GET", "api/outbox", f.tokens[store.RoleAdmin], "", &p); got != http.StatusOK || p.CanReplay || len(p.Dead) != 1 {
		t.Fatalf("read-only outbox: %d, can_replay %v, %d dead; want 200, false, 1", got, p.CanReplay, len(p.Dead))
	}
	if got := f.call(t, "POST", "api/outbox/"+strconv.FormatInt(p.Dead[0].ID, 10)+"/replay", f.tokens[store.RoleAdmin], "", nil); got != http.StatusForbidden {
		t.Errorf("read-only replay: %d, want 403", got)
	}
	ms, err := f.s.OutboxList(context.Background(), &store.OutboxListParams{State: store.OutboxDead})
	if err != nil || len(ms) != 1 {
		t.Errorf("read-only replay changed the store: %d dead, %v", len(ms), err)
	}
}
