package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// Webhook is a subscription: the outbox gets one message for it per event
// that passes all its filters (an empty filter passes everything).
type Webhook struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
	// EventTypes are job event types (succeeded, failed, ...) and run event
	// types (run_succeeded, run_failed, ...).
	EventTypes []string `json:"event_types,omitempty"`
	// Queues and Kinds select job events by the job's queue and kind; run
	// events have neither and pass these two filters.
	Queues    []string  `json:"queues,omitempty"`
	Kinds     []string  `json:"kinds,omitempty"`
	Runs      []string  `json:"runs,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// OutboxState is where a message is in its delivery.
type OutboxState string

// The outbox states.
const (
	OutboxPending   OutboxState = "pending"
	OutboxDelivered OutboxState = "delivered"
	OutboxDead      OutboxState = "dead"
)

// Aggregates: what an outbox message is about; delivery keeps order per
// (webhook, aggregate).
const (
	AggregateJob = "job"
	AggregateRun = "run"
)

// OutboxMessage is one delivery of one event to one webhook.
type OutboxMessage struct {
	ID          int64           `json:"id"`
	WebhookID   string          `json:"webhook_id"`
	Aggregate   string          `json:"aggregate"`
	AggregateID string          `json:"aggregate_id"`
	EventType   string          `json:"event_type"`
	Payload     json.RawMessage `json:"payload"`
	State       OutboxState     `json:"state"`
	// Attempts counts delivery attempts; each claim adds one and fences the
	// claimer's report.
	Attempts int `json:"attempts"`
	// NextAttemptAt is when the message is next due: after a backoff, or
	// when a claimer's lease on it runs out.
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// Key is the message's stable id: the webhook-id and Idempotency-Key of
// every attempt to deliver it.
func (m OutboxMessage) Key() string { return "msg_" + strconv.FormatInt(m.ID, 10) }

// OutboxStore keeps webhook subscriptions and delivers the outbox.
type OutboxStore interface {
	// WebhookAdd adds a subscription; it sees events from the next commit on.
	WebhookAdd(ctx context.Context, w Webhook) (Webhook, error)
	WebhookList(ctx context.Context) ([]Webhook, error)
	WebhookRemove(ctx context.Context, id string) error
	// OutboxClaim leases up to Limit messages for delivery, each the oldest
	// pending message of its (webhook, aggregate) and due now, for Lease.
	// Safe on many nodes: rows another claimer holds are skipped.
	OutboxClaim(ctx context.Context, p *OutboxClaimParams) ([]OutboxDelivery, error)
	// OutboxDelivered records a delivery; fenced on the attempt the claim
	// returned. A run's final status delivered sets the run's reported_at.
	OutboxDelivered(ctx context.Context, p *OutboxReportParams) error
	// OutboxFailed records a failed attempt: retried at RetryAt, or dead
	// when Dead. Fenced like OutboxDelivered.
	OutboxFailed(ctx context.Context, p *OutboxReportParams) error
	// OutboxList lists messages (the dead-letter queue with State dead).
	OutboxList(ctx context.Context, p *OutboxListParams) ([]OutboxMessage, error)
	// OutboxReplay makes a dead message pending again, due now.
	OutboxReplay(ctx context.Context, id int64) (OutboxMessage, error)
}

// OutboxDelivery is a claimed message and the webhook to deliver it to.
type OutboxDelivery struct {
	Message OutboxMessage
	Webhook Webhook
}

// OutboxClaimParams bound one claim.
type OutboxClaimParams struct {
	Limit int
	// Lease is how long the claimer holds the messages; after it they are
	// due again (a claimer killed mid-delivery loses nothing).
	Lease time.Duration
	Now   *time.Time
	// Webhooks, when set, claims only these webhooks' messages;
	// SkipWebhooks never claims theirs. A deliverer that hands some
	// webhooks to a batch sender (the bus bridge) claims them apart.
	Webhooks, SkipWebhooks []string
}

// OutboxReportParams report one delivery attempt.
type OutboxReportParams struct {
	ID      int64
	Attempt int
	Error   string
	RetryAt *time.Time
	Dead    bool
	Now     *time.Time
}

// OutboxListParams select outbox messages.
type OutboxListParams struct {
	State   OutboxState // empty: any
	AfterID int64
	Limit   int
}
