package bus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// TestEventOutlivesSpentAttempts is the window of the event lost once in a
// 2,000-request fault run (one `enqueued`, rev 1, never on the stream while
// its job and every other event were fine). JetStream acknowledges a
// publish only once stored, so an event is lost only if the outbox gives up
// on it: a message is dead-lettered on a failure once its attempts reach
// MaxAttempts (10), and every claim is an attempt, also one whose lease ran
// out unreported: the claims of the stint process killed -9, and those of
// deliverers slower than their lease on the loaded machine (16 messages
// delivered one by one, each its own transaction). A message that had
// spent its attempts that way was dead-lettered by the first publish that
// failed during the NATS restart that followed, and the next events of its
// job, no longer behind it, went out.
//
// Here, deterministically (a manual clock, fault hooks, a private
// nats-server killed -9): nine claims run out unreported, publishes fail,
// NATS goes away and comes back. The event must reach the stream, and the
// outbox must hold nothing dead; while the bus is away no attempt is spent.
func TestEventOutlivesSpentAttempts(t *testing.T) {
	t.Parallel()
	srv := startNATS(t)
	ctx := context.Background()
	st := sqliteStore(t, store.Options{})
	cfg := uniqueConfig(t, srv.url())
	b, err := New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	var failing atomic.Bool
	b.publishHook = func(string) error {
		if failing.Load() {
			return errors.New("nats: timeout") // what a publish to a restarting server answers
		}
		return nil
	}
	clk := clock.NewManual(time.Now().Add(time.Second)) // the enqueue's messages are due
	const lease = 30 * time.Second
	d, err := outbox.New(st, &outbox.Config{Client: &http.Client{Transport: b.Transport(nil)}, Clock: clk, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{ActorID: actor, RequestID: "lost-1", Jobs: []lifecycle.Spec{{
		Kind: "job.chat.simple", Topic: "job.chat.simple", Queue: b.cfg.Queue, CorrelationID: "lost-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	message := func() store.OutboxMessage {
		t.Helper()
		ms, err := st.OutboxList(ctx, &store.OutboxListParams{Limit: 10})
		if err != nil || len(ms) != 1 {
			t.Fatalf("outbox: %d messages (%v), want the one enqueued event", len(ms), err)
		}
		return ms[0]
	}

	// Nine claims whose leases run out unreported (a deliverer killed -9,
	// or one slower than its lease).
	for range 9 {
		now := clk.Now()
		if ds, err := st.OutboxClaim(ctx, &store.OutboxClaimParams{Limit: 10, Lease: lease, Now: &now}); err != nil || len(ds) != 1 {
			t.Fatalf("claim: %d messages, %v", len(ds), err)
		}
		clk.Advance(lease + time.Second)
	}
	// Publishes fail for a while (a NATS restart, a timeout under load).
	failing.Store(true)
	for range 5 {
		if _, err := d.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if m := message(); m.State != store.OutboxPending {
			t.Fatalf("after a failed publish at attempt %d the event is %s (%s): it would never reach the bus", m.Attempts, m.State, m.LastError)
		}
		clk.Advance(2 * time.Minute)
	}
	// NATS killed -9: nothing is claimed while the bus is away.
	srv.kill()
	eventually(t, "the bridge to see the bus gone", func() bool { return !b.connected() })
	before := message().Attempts
	if n, err := d.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("a pass with the bus away claimed %d messages (%v)", n, err)
	}
	if after := message().Attempts; after != before {
		t.Fatalf("a pass with the bus away spent attempts: %d → %d", before, after)
	}
	// Back: the event goes out, once.
	srv.start()
	failing.Store(false)
	nc, err := nats.Connect(srv.url(), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	h := &harness{t: t, st: st, cfg: cfg, b: b, nc: nc, js: js}
	want := fmt.Sprintf("%s:%d", id, 1)
	eventually(t, "the enqueued event on the stream", func() bool {
		clk.Advance(2 * time.Minute)
		if _, err := d.Pass(ctx); err != nil {
			t.Logf("pass: %v", err)
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := js.Stream(sctx, cfg.EventStream)
		if err != nil {
			return false // JetStream is still starting
		}
		info, err := s.Info(sctx)
		return err == nil && info.State.Msgs > 0
	})
	if m := message(); m.State != store.OutboxDelivered {
		t.Fatalf("the published event is %s in the outbox", m.State)
	}
	if got := h.readStream(cfg.EventStream, cfg.EventPrefix)[want].Result; got.JobID != "lost-1" || got.Status != StatusScheduled || got.Revision != 1 {
		t.Fatalf("event %+v", got)
	}
}
