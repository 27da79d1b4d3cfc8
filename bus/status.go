package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stint-dev/stint/store"
)

// BridgeStatus is what the bridge knows about itself and its streams: the
// dashboard's bus page.
type BridgeStatus struct {
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Connected bool      `json:"connected"`
	Queue     string    `json:"queue"`
	At        time.Time `json:"at"`
	// Streams and Consumers are read from the server; Error says what could
	// not be read (the bus away).
	Streams   []StreamStatus   `json:"streams"`
	Consumers []ConsumerStatus `json:"consumers"`
	Error     string           `json:"error,omitempty"`
	// Counts are the bridge's counters since this process started.
	Counts Counts `json:"counts"`
	// Dispatched is how many jobs are out with bus workers now.
	Dispatched int `json:"dispatched"`
	// EventsWaiting counts the bridge's events not yet published (up to
	// the first 1,000 pending outbox messages); OldestEvent is the commit
	// time of the oldest of them: the event lag.
	EventsWaiting int        `json:"events_waiting"`
	OldestEvent   *time.Time `json:"oldest_event,omitempty"`
}

// StreamStatus is one of the bridge's streams.
type StreamStatus struct {
	Role     string `json:"role"` // requests, dispatch, results, events
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}

// ConsumerStatus is a durable consumer of the bridge's streams: the
// bridge's own (requests, results) and the bus workers' (dispatch).
type ConsumerStatus struct {
	Stream string `json:"stream"`
	Name   string `json:"name"`
	// Pending is how far behind the consumer is: messages not yet
	// delivered to it.
	Pending     uint64     `json:"pending"`
	AckPending  int        `json:"ack_pending"`
	Redelivered int        `json:"redelivered"`
	Waiting     int        `json:"waiting"`
	LastActive  *time.Time `json:"last_active,omitempty"`
}

// Counts are the bridge's counters.
type Counts struct {
	Received   int64            `json:"received"`
	Enqueued   int64            `json:"enqueued"`
	Duplicates int64            `json:"duplicates"`
	Denied     int64            `json:"denied"`
	Rejected   map[string]int64 `json:"rejected"`
	Dispatched int64            `json:"dispatched"`
	Applied    map[string]int64 `json:"applied"`
	Ignored    map[string]int64 `json:"ignored"`
	Published  int64            `json:"published"`
}

// maxWaiting bounds the outbox messages Status reads.
const maxWaiting = 1000

// Status reads the bridge's state: its counters, what is out with bus
// workers and waiting in the outbox, and its streams and consumers (within
// ctx; 5s at most).
func (b *Bridge) Status(ctx context.Context) BridgeStatus {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s := BridgeStatus{Name: b.cfg.Name, Queue: b.cfg.Queue, At: b.cfg.Clock.Now(), Counts: b.m.counts()}
	s.Dispatched = b.out.size()
	b.mu.Lock()
	nc, js := b.nc, b.js
	b.mu.Unlock()
	if nc != nil {
		s.URL, s.Connected = nc.ConnectedUrlRedacted(), nc.IsConnected()
	}
	if err := b.waitingEvents(ctx, &s); err != nil {
		s.Error = "outbox: " + err.Error()
	}
	if js == nil || !s.Connected {
		if s.Error == "" {
			s.Error = "the bus is unreachable"
		}
		return s
	}
	for _, r := range []struct{ role, name string }{{"requests", b.cfg.RequestStream}, {"dispatch", b.cfg.DispatchStream},
		{"results", b.cfg.ResultStream}, {"events", b.cfg.EventStream}} {
		st, err := js.Stream(ctx, r.name)
		if err != nil {
			s.Error = r.name + ": " + err.Error()
			continue
		}
		if info, err := st.Info(ctx); err == nil {
			s.Streams = append(s.Streams, StreamStatus{Role: r.role, Name: r.name, Messages: info.State.Msgs, Bytes: info.State.Bytes})
		}
		if r.role == "events" {
			continue
		}
		l := st.ListConsumers(ctx)
		for c := range l.Info() {
			s.Consumers = append(s.Consumers, consumerStatus(c))
		}
		if err := l.Err(); err != nil {
			s.Error = r.name + " consumers: " + err.Error()
		}
	}
	return s
}

func consumerStatus(c *jetstream.ConsumerInfo) ConsumerStatus {
	return ConsumerStatus{Stream: c.Stream, Name: c.Name, Pending: c.NumPending, AckPending: c.NumAckPending,
		Redelivered: c.NumRedelivered, Waiting: c.NumWaiting, LastActive: c.Delivered.Last}
}

// waitingEvents counts the bridge's unpublished events.
func (b *Bridge) waitingEvents(ctx context.Context, s *BridgeStatus) error {
	hooks, err := b.st.WebhookList(ctx)
	if err != nil {
		return err
	}
	id := ""
	for _, h := range hooks {
		if h.URL == WebhookURL(b.cfg.Name) {
			id = h.ID
		}
	}
	ms, err := b.st.OutboxList(ctx, &store.OutboxListParams{State: store.OutboxPending, Limit: maxWaiting})
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.WebhookID != id {
			continue
		}
		s.EventsWaiting++
		if s.OldestEvent == nil {
			at := m.CreatedAt
			s.OldestEvent = &at
		}
	}
	return nil
}

// counts reads the counters.
func (m *metrics) counts() Counts {
	return Counts{Received: value(m.received), Enqueued: value(m.enqueued), Duplicates: value(m.duplicates),
		Denied: value(m.denied), Rejected: values(m.rejected), Dispatched: value(m.dispatched), Applied: values(m.applied),
		Ignored: values(m.ignored), Published: value(m.published)}
}

func value(c prometheus.Metric) int64 {
	var d dto.Metric
	if c.Write(&d) != nil || d.Counter == nil {
		return 0
	}
	return int64(d.Counter.GetValue())
}

// values reads a counter vector by its one label.
func values(v *prometheus.CounterVec) map[string]int64 {
	out := map[string]int64{}
	ch := make(chan prometheus.Metric, 16)
	go func() {
		v.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil || d.Counter == nil || len(d.Label) == 0 {
			continue
		}
		out[d.Label[0].GetValue()] = int64(d.Counter.GetValue())
	}
	return out
}
