package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// batchSender is a BatchSender in the Deliverer's client's transport, for
// webhooks whose URL is its host; other requests go over HTTP.
type batchSender struct {
	http.RoundTripper
	mu      sync.Mutex
	got     map[int64]int // message id → times sent
	calls   int
	largest int
	away    atomic.Bool
	fail    atomic.Bool // every send fails, as unavailable
}

const batchHost = "http://batch.invalid/"

func (b *batchSender) Handles(w store.Webhook) bool { return w.URL == batchHost }
func (b *batchSender) Available() bool              { return !b.away.Load() }
func (b *batchSender) SendBatch(_ context.Context, _ store.Webhook, ms []store.OutboxMessage) []error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	b.largest = max(b.largest, len(ms))
	errs := make([]error, len(ms))
	for i, m := range ms {
		if b.fail.Load() {
			errs[i] = fmt.Errorf("%w: the bus is restarting", outbox.ErrUnavailable)
			continue
		}
		b.got[m.ID]++
	}
	return errs
}

// A batch sender's webhook is claimed apart, sent many messages at a call,
// and recorded delivered in one transaction; an HTTP webhook beside it is
// delivered as before; a sender that is away is left alone (no attempt
// spent); an unavailable receiver never dead-letters a message, however
// many attempts it took; a delivery whose claim went stale is not recorded.
func TestBatchSender(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := t.Context()
			rc, srv := newReceiver(t)
			for _, url := range []string{batchHost, srv.URL} {
				if _, err := s.WebhookAdd(ctx, store.Webhook{URL: url, Secret: secret, EventTypes: []string{"enqueued"}}); err != nil {
					t.Fatal(err)
				}
			}
			const n = 40
			for i := range n {
				if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: fmt.Sprintf("k%d", i)}}}); err != nil {
					t.Fatal(err)
				}
			}
			bs := &batchSender{RoundTripper: http.DefaultTransport, got: map[int64]int{}}
			clk := clock.NewManual(time.Now().Add(time.Second))
			cfg := &outbox.Config{Client: &http.Client{Transport: bs}, Clock: clk, MaxAttempts: 2, Limit: 8,
				Backoff: lifecycle.Backoff{Base: time.Millisecond, Max: time.Millisecond}, Logger: slog.New(slog.DiscardHandler)}
			d, err := outbox.New(s, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pending := func() []store.OutboxMessage {
				ms, err := s.OutboxList(ctx, &store.OutboxListParams{State: store.OutboxPending, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return ms
			}

			// Away: the HTTP webhook's messages go, the sender's wait unclaimed.
			bs.away.Store(true)
			for range n / 8 {
				if _, err := d.Pass(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if rc.got() != n {
				t.Fatalf("the HTTP webhook got %d of %d", rc.got(), n)
			}
			for _, m := range pending() {
				if m.Attempts != 0 {
					t.Fatalf("message %d spent %d attempts while its sender was away", m.ID, m.Attempts)
				}
			}
			// Unavailable, again and again, past MaxAttempts: never dead.
			bs.away.Store(false)
			bs.fail.Store(true)
			for range 4 {
				if _, err := d.Pass(ctx); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Second)
			}
			if dead, _ := s.OutboxList(ctx, &store.OutboxListParams{State: store.OutboxDead}); len(dead) > 0 {
				t.Fatalf("an unavailable receiver dead-lettered %d messages: %+v", len(dead), dead[0])
			}
			// A claim that goes stale (its lease ran out and another took the
			// message) is not recorded by its first claimer.
			now := clk.Now()
			stale, err := s.OutboxClaim(ctx, &store.OutboxClaimParams{Limit: 1, Lease: time.Second, Now: &now})
			if err != nil || len(stale) != 1 {
				t.Fatalf("claim: %d, %v", len(stale), err)
			}
			clk.Advance(2 * time.Second)
			bs.fail.Store(false)
			if k, err := d.Pass(ctx); err != nil || k != n {
				t.Fatalf("pass: %d claimed (%v), want all %d in one batch", k, err, n)
			}
			if bs.largest != n {
				t.Errorf("largest batch %d, want %d", bs.largest, n)
			}
			if len(pending()) != 0 {
				t.Fatalf("%d messages still pending", len(pending()))
			}
			r, ok := store.As[store.OutboxBatchReporter](s)
			if !ok {
				t.Fatal("the store records no batch")
			}
			again, err := r.OutboxDeliveredMany(ctx, &store.OutboxDeliveredManyParams{Messages: []store.OutboxMessage{stale[0].Message}})
			if err != nil || len(again) != 1 || again[0] != stale[0].Message.ID {
				t.Fatalf("a stale claim's report: stale %v, %v", again, err)
			}
			for id, k := range bs.got {
				if k != 1 {
					t.Errorf("message %d sent %d times", id, k)
				}
			}
			if len(bs.got) != n {
				t.Errorf("the sender got %d messages, want %d", len(bs.got), n)
			}
		})
	}
}
