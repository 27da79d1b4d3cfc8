package server

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Webhooks and the outbox carry no tenant: a subscription sees the events
// of the whole database. So only admins of the default tenant, who see the
// database's un-namespaced jobs, may manage them (the dashboard does the
// same); an admin of another tenant gets permission_denied.

// wholeDatabase refuses a caller that is not an admin of the default tenant.
func wholeDatabase(ctx context.Context) error {
	return wholeDatabaseFor(ctx, "webhooks and the outbox")
}

// wholeDatabaseFor refuses a caller that is not an admin of the default
// tenant the things what names, which have no tenant.
func wholeDatabaseFor(ctx context.Context, what string) error {
	p := principalOf(ctx)
	if p.role != store.RoleAdmin || p.tenant.name != DefaultTenant {
		return connect.NewError(connect.CodePermissionDenied, errorf(
			"%s belong to the whole database, not to tenant %q: use an admin token of the %q tenant",
			what, p.tenant.name, DefaultTenant))
	}
	return nil
}

func webhookToProto(w store.Webhook) *stintv1.Webhook {
	return &stintv1.Webhook{Id: w.ID, Url: w.URL, Secret: w.Secret, EventTypes: w.EventTypes, Queues: w.Queues,
		Kinds: w.Kinds, Runs: w.Runs, CreatedAt: ts(w.CreatedAt)}
}

func outboxStateToProto(s store.OutboxState) stintv1.OutboxState {
	return stintv1.OutboxState(enumOf(stintv1.OutboxState(0).Descriptor(), "OUTBOX_STATE_", string(s)))
}

func outboxToProto(m store.OutboxMessage) *stintv1.OutboxMessage {
	return &stintv1.OutboxMessage{
		Id: m.ID, WebhookId: m.WebhookID, Aggregate: m.Aggregate, AggregateId: m.AggregateID, EventType: m.EventType,
		Payload: jsonToValue(m.Payload), State: outboxStateToProto(m.State), Attempts: int32(m.Attempts),
		NextAttemptAt: ts(m.NextAttemptAt), LastError: m.LastError, CreatedAt: ts(m.CreatedAt), DeliveredAt: tsPtr(m.DeliveredAt),
	}
}

// AddWebhook subscribes a URL; the store checks the URL and the secret.
func (h *admin) AddWebhook(ctx context.Context, req *connect.Request[stintv1.AddWebhookRequest]) (*connect.Response[stintv1.AddWebhookResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	w := req.Msg.Webhook
	if w == nil {
		return nil, invalid("webhook is required: its url and secret, and optional filters")
	}
	if w.Id != "" || w.CreatedAt != nil {
		return nil, invalid("webhook id and created_at are set by the server: leave them empty")
	}
	if err := checkText("url", w.Url, 4<<10); err != nil {
		return nil, err
	}
	if err := checkText("secret", w.Secret, 4<<10); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		vs   []string
	}{{"event_types", w.EventTypes}, {"queues", w.Queues}, {"kinds", w.Kinds}, {"runs", w.Runs}} {
		if len(f.vs) > MaxBatch {
			return nil, invalid("%s has %d entries: the limit is %d", f.name, len(f.vs), MaxBatch)
		}
		for _, v := range f.vs {
			if err := checkName(f.name, v); err != nil {
				return nil, err
			}
		}
	}
	got, err := h.s.WebhookAdd(ctx, store.Webhook{URL: w.Url, Secret: w.Secret, EventTypes: w.EventTypes,
		Queues: w.Queues, Kinds: w.Kinds, Runs: w.Runs})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.AddWebhookResponse{Webhook: webhookToProto(got)}), nil
}

// ListWebhooks lists the subscriptions, with their secrets.
func (h *admin) ListWebhooks(ctx context.Context, _ *connect.Request[stintv1.ListWebhooksRequest]) (*connect.Response[stintv1.ListWebhooksResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	ws, err := h.s.WebhookList(ctx)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListWebhooksResponse{}
	for _, w := range ws {
		out.Webhooks = append(out.Webhooks, webhookToProto(w))
	}
	return connect.NewResponse(out), nil
}

// RemoveWebhook deletes a subscription.
func (h *admin) RemoveWebhook(ctx context.Context, req *connect.Request[stintv1.RemoveWebhookRequest]) (*connect.Response[stintv1.RemoveWebhookResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	if err := checkName("id", req.Msg.Id); err != nil {
		return nil, err
	}
	if err := h.s.WebhookRemove(ctx, req.Msg.Id); err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.RemoveWebhookResponse{}), nil
}

// TestWebhook sends a signed test event from the server to the webhook.
func (h *admin) TestWebhook(ctx context.Context, req *connect.Request[stintv1.TestWebhookRequest]) (*connect.Response[stintv1.TestWebhookResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	if err := checkName("id", req.Msg.Id); err != nil {
		return nil, err
	}
	ws, err := h.s.WebhookList(ctx)
	if err != nil {
		return nil, toConnect(err)
	}
	for _, w := range ws {
		if w.ID == req.Msg.Id {
			resp, err := SendTestWebhook(ctx, &http.Client{Timeout: 10 * time.Second}, w, h.cfg.Clock.Now())
			if err != nil {
				// Not Unavailable: that would send a remote client to
				// another server of the cluster to try again.
				return nil, connect.NewError(connect.CodeFailedPrecondition, errorf("webhook %s could not be reached from the server: %v", w.ID, err))
			}
			return connect.NewResponse(&stintv1.TestWebhookResponse{StatusCode: int32(resp.StatusCode), Status: resp.Status}), nil
		}
	}
	return nil, toConnect(webhookNotFound(req.Msg.Id))
}

// ListOutbox lists outbox messages in id order.
func (h *admin) ListOutbox(ctx context.Context, req *connect.Request[stintv1.ListOutboxRequest]) (*connect.Response[stintv1.ListOutboxResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	m := req.Msg
	size, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	if m.AfterId < 0 {
		return nil, invalid("after_id %d is negative", m.AfterId)
	}
	q := store.OutboxListParams{AfterID: m.AfterId, Limit: size}
	if m.State != stintv1.OutboxState_OUTBOX_STATE_UNSPECIFIED {
		n, ok := nameOf(m.State.Descriptor(), "OUTBOX_STATE_", protoreflect.EnumNumber(m.State))
		if !ok {
			return nil, invalid("state %d: expected OUTBOX_STATE_PENDING, _DELIVERED or _DEAD", m.State)
		}
		q.State = store.OutboxState(n)
	}
	ms, err := h.s.OutboxList(ctx, &q)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListOutboxResponse{}
	for _, msg := range ms {
		out.Messages = append(out.Messages, outboxToProto(msg))
	}
	return connect.NewResponse(out), nil
}

// ReplayOutbox makes a dead message pending again.
func (h *admin) ReplayOutbox(ctx context.Context, req *connect.Request[stintv1.ReplayOutboxRequest]) (*connect.Response[stintv1.ReplayOutboxResponse], error) {
	if err := wholeDatabase(ctx); err != nil {
		return nil, err
	}
	if req.Msg.Id <= 0 {
		return nil, invalid("id %d: give the message id `stint outbox ls --dead` shows", req.Msg.Id)
	}
	msg, err := h.s.OutboxReplay(ctx, req.Msg.Id)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.ReplayOutboxResponse{Message: outboxToProto(msg)}), nil
}
