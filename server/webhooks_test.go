package server_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/outbox"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// delivery is one request a test receiver got, its signature checked.
type delivery struct {
	payload  store.OutboxPayload
	verified bool
	key      string
}

// receiver is an httptest server that checks each request's signature
// with secret and hands it to the test.
func receiver(t *testing.T, secret string) (string, <-chan delivery) {
	t.Helper()
	got := make(chan delivery, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sec, _ := strconv.ParseInt(r.Header.Get(outbox.HeaderTimestamp), 10, 64)
		id := r.Header.Get(outbox.HeaderID)
		var d delivery
		_ = json.Unmarshal(body, &d.payload)
		d.verified = outbox.Verify(secret, id, time.Unix(sec, 0), body, r.Header.Get(outbox.HeaderSignature))
		d.key = r.Header.Get(outbox.HeaderIdempotencyKey)
		got <- d
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// next returns the next delivery of type typ, skipping others.
func next(t *testing.T, got <-chan delivery, typ string) delivery {
	t.Helper()
	for {
		select {
		case d := <-got:
			if d.payload.Type == typ {
				return d
			}
		case <-t.Context().Done():
			t.Fatalf("no %s delivery: %v", typ, t.Context().Err())
		}
	}
}

// TestWebhooksOverAPI: an admin of the default tenant subscribes a real
// receiver over the API; a run created and worked over the API delivers
// its final status to it, signed, and the run is then reported. The test
// RPC reaches the receiver; the outbox lists and refuses to replay a
// delivered message. Other roles and tenants are refused, nothing written.
func TestWebhooksOverAPI(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		admin, client, acmeAdmin := e.token(server.DefaultTenant, store.RoleAdmin), e.token(server.DefaultTenant, store.RoleClient), e.token("acme", store.RoleAdmin)
		const secret = "whsec_dGVzdC1zZWNyZXQtdGVzdC1zZWNyZXQ="
		url, got := receiver(t, secret)
		d, err := outbox.New(s, &outbox.Config{Interval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Stop)

		// Refused: a client (role), an admin of another tenant, a bad URL.
		hook := &stintv1.Webhook{Url: url, Secret: secret, EventTypes: []string{"run_succeeded", "run_failed"}}
		if _, err := e.admin(client).ListWebhooks(ctx, connect.NewRequest(&stintv1.ListWebhooksRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("a client listing webhooks: %v, want permission_denied", err)
		}
		for name, call := range map[string]func() error{
			"AddWebhook": func() error {
				_, err := e.admin(acmeAdmin).AddWebhook(ctx, connect.NewRequest(&stintv1.AddWebhookRequest{Webhook: hook}))
				return err
			},
			"ListWebhooks": func() error {
				_, err := e.admin(acmeAdmin).ListWebhooks(ctx, connect.NewRequest(&stintv1.ListWebhooksRequest{}))
				return err
			},
			"ListOutbox": func() error {
				_, err := e.admin(acmeAdmin).ListOutbox(ctx, connect.NewRequest(&stintv1.ListOutboxRequest{}))
				return err
			},
			"ReplayOutbox": func() error {
				_, err := e.admin(acmeAdmin).ReplayOutbox(ctx, connect.NewRequest(&stintv1.ReplayOutboxRequest{Id: 1}))
				return err
			},
		} {
			if err := call(); connect.CodeOf(err) != connect.CodePermissionDenied {
				t.Errorf("%s by another tenant's admin: %v, want permission_denied", name, err)
			}
		}
		_, err = e.admin(admin).AddWebhook(ctx, connect.NewRequest(&stintv1.AddWebhookRequest{Webhook: &stintv1.Webhook{Url: "ftp://x", Secret: secret}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("a bad URL: %v, want invalid_argument", err)
		}
		if ws, _ := s.WebhookList(ctx); len(ws) != 0 {
			t.Fatalf("%d webhooks after refusals, want 0", len(ws))
		}

		added, err := e.admin(admin).AddWebhook(ctx, connect.NewRequest(&stintv1.AddWebhookRequest{Webhook: hook}))
		if err != nil {
			t.Fatal(err)
		}
		w := added.Msg.Webhook
		if w.Id == "" || w.Url != url {
			t.Fatalf("added %+v", w)
		}
		if _, err := e.admin(admin).TestWebhook(ctx, connect.NewRequest(&stintv1.TestWebhookRequest{Id: w.Id})); err != nil {
			t.Fatal(err)
		}
		if d := next(t, got, server.TestEventType); !d.verified {
			t.Fatal("the test event's signature does not verify")
		}

		// A run created and worked over the API reports its final status.
		run := e.createRun(client)
		for range 2 {
			c, err := e.worker(admin).Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"ci"}, Start: true}))
			if err != nil || len(c.Msg.Jobs) != 1 {
				t.Fatalf("claim: %v", err)
			}
			if _, err := e.worker(admin).Complete(ctx, connect.NewRequest(&stintv1.CompleteRequest{Owner: owner(c.Msg.Jobs[0], "done")})); err != nil {
				t.Fatal(err)
			}
		}
		final := next(t, got, "run_succeeded")
		if !final.verified || final.payload.AggregateID != run.Run.Id || final.key == "" {
			t.Fatalf("final status delivery %+v", final)
		}
		for {
			v, err := e.runs(client).GetRun(ctx, connect.NewRequest(&stintv1.GetRunRequest{Id: run.Run.Id}))
			if err != nil {
				t.Fatal(err)
			}
			if v.Msg.Run.Run.ReportedAt != nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("the run is never reported")
			case <-time.After(10 * time.Millisecond):
			}
		}

		// The outbox over the API.
		list, err := e.admin(admin).ListOutbox(ctx, connect.NewRequest(&stintv1.ListOutboxRequest{State: stintv1.OutboxState_OUTBOX_STATE_DELIVERED}))
		if err != nil || len(list.Msg.Messages) == 0 {
			t.Fatalf("ListOutbox delivered: %v %v", list, err)
		}
		m := list.Msg.Messages[0]
		if _, err := e.admin(admin).ReplayOutbox(ctx, connect.NewRequest(&stintv1.ReplayOutboxRequest{Id: m.Id})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Fatalf("replaying a delivered message: %v, want failed_precondition", err)
		}
		dead, err := e.admin(admin).ListOutbox(ctx, connect.NewRequest(&stintv1.ListOutboxRequest{State: stintv1.OutboxState_OUTBOX_STATE_DEAD}))
		if err != nil || len(dead.Msg.Messages) != 0 {
			t.Fatalf("ListOutbox dead: %v %v", dead, err)
		}
		if _, err := e.admin(admin).RemoveWebhook(ctx, connect.NewRequest(&stintv1.RemoveWebhookRequest{Id: w.Id})); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin(admin).RemoveWebhook(ctx, connect.NewRequest(&stintv1.RemoveWebhookRequest{Id: w.Id})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("removing it again: %v, want not_found", err)
		}
	})
}
