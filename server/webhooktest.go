package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// TestEventType is the type of the event SendTestWebhook sends.
const TestEventType = "webhook_test"

// SendTestWebhook posts one signed test event straight to w (not through
// the outbox), with the headers of a real delivery, and returns the
// receiver's answer (its body closed). `stint webhooks test` uses it
// locally, and the server's TestWebhook over the API.
func SendTestWebhook(ctx context.Context, client *http.Client, w store.Webhook, now time.Time) (*http.Response, error) {
	id := "msg_test_" + strconv.FormatInt(now.UnixNano(), 10)
	body, err := json.Marshal(store.OutboxPayload{Type: TestEventType, Aggregate: "webhook", AggregateID: w.ID, Timestamp: now, Data: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(outbox.HeaderID, id)
	req.Header.Set(outbox.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(outbox.HeaderSignature, outbox.Sign(w.Secret, id, now, body))
	req.Header.Set(outbox.HeaderIdempotencyKey, id)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

func webhookNotFound(id string) error {
	return &lifecycle.Error{Kind: store.ErrNotFound, Msg: "webhook " + id + ": no webhook has this id; list them with `stint webhooks ls`"}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
