package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// claimCounter counts the claims that are not a batch sender's (no
// Webhooks named), keeping every capability of the store it wraps.
type claimCounter struct {
	store.Store
	general atomic.Int32
}

func (c *claimCounter) Unwrap() store.Store { return c.Store }

func (c *claimCounter) OutboxClaim(ctx context.Context, p *store.OutboxClaimParams) ([]store.OutboxDelivery, error) {
	if len(p.Webhooks) == 0 {
		c.general.Add(1)
	}
	return c.Store.OutboxClaim(ctx, p)
}

// With only the batch sender's webhooks, a pass that found the sender's
// messages claims nothing else (the claim would walk the same messages for
// none); a pass that found none still does, and once another webhook exists,
// every pass does.
func TestBatchOnlySkipsTheOtherClaim(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &claimCounter{Store: open(t)}
			ctx := t.Context()
			if _, err := s.WebhookAdd(ctx, store.Webhook{URL: batchHost, Secret: secret, EventTypes: []string{"enqueued"}}); err != nil {
				t.Fatal(err)
			}
			enqueue := func(n int) {
				for i := range n {
					if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: fmt.Sprintf("k%d", i)}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			bs := &batchSender{RoundTripper: http.DefaultTransport, got: map[int64]int{}}
			clk := clock.NewManual(time.Now().Add(time.Second))
			d, err := outbox.New(s, &outbox.Config{Client: &http.Client{Transport: bs}, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			pass := func(want int) {
				t.Helper()
				if n, err := d.Pass(ctx); err != nil || n != want {
					t.Fatalf("pass: %d messages (%v), want %d", n, err, want)
				}
			}

			enqueue(3)
			pass(3)
			if g := s.general.Load(); g != 0 {
				t.Fatalf("a busy pass with only the sender's webhook made %d other claims", g)
			}
			pass(0)
			if g := s.general.Load(); g != 1 {
				t.Fatalf("an idle pass made %d other claims, want 1", g)
			}

			rc, srv := newReceiver(t)
			if _, err := s.WebhookAdd(ctx, store.Webhook{URL: srv.URL, Secret: secret, EventTypes: []string{"enqueued"}}); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second) // the webhook list is read again
			enqueue(1)
			pass(2)
			if g := s.general.Load(); g != 2 || rc.got() != 1 {
				t.Fatalf("with another webhook: %d other claims (want 2), it got %d messages (want 1)", g, rc.got())
			}
		})
	}
}
