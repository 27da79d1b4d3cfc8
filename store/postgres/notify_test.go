package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// listen opens a plain connection listening on the schema's channel.
func listen(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"stint_" + schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// nextNotification waits up to 10 s for the next notification's payload.
func nextNotification(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("waiting for a notification: %v", err)
	}
	return payloadQueue(n.Payload)
}

// payloadQueue is the queue a queue notice names: "q:<queue>", or
// "k:<priority>:<created_at>:<queue>" when it carries the lowest claim key
// of the jobs the transaction queued.
func payloadQueue(p string) string {
	if rest, ok := strings.CutPrefix(p, "k:"); ok {
		if parts := strings.SplitN(rest, ":", 3); len(parts) == 3 {
			return parts[2]
		}
	}
	return strings.TrimPrefix(p, "q:")
}

// A commit sends one notification per queue that gained claimable jobs,
// however many jobs it enqueued; notifications arrive in commit order.
func TestNotifyOncePerQueuePerTransaction(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	conn := listen(t, d.Schema())
	ctx := context.Background()
	batch := append(specs(50, "q1"), specs(50, "q2")...)
	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: batch}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, 1, "marker")
	got := map[string]int{}
	for {
		q := nextNotification(t, conn)
		if q == "marker" {
			break
		}
		got[q]++
	}
	if len(got) != 2 || got["q1"] != 1 || got["q2"] != 1 {
		t.Errorf("notifications before the marker: %v, want q1 and q2 once each", got)
	}
}

func TestDisableNotifySendsNothing(t *testing.T) {
	t.Parallel()
	quiet, d := newStore(t, postgres.Options{DisableNotify: true})
	loud, err := postgres.OpenStore(context.Background(), pgtest.URL(t), postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer loud.Close()
	conn := listen(t, d.Schema())
	enqueue(t, quiet, 5, "q")
	enqueue(t, loud, 1, "marker")
	if q := nextNotification(t, conn); q != "marker" {
		t.Errorf("first notification %q, want marker: the store with DisableNotify notified", q)
	}
}

// A store hears the wake-ups of another process's commits through LISTEN.
func TestWakeupsReachOtherStores(t *testing.T) {
	t.Parallel()
	producer, d := newStore(t, postgres.Options{})
	consumer, err := postgres.OpenStore(context.Background(), pgtest.URL(t), postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	awaitWakeup(t, consumer, func() { enqueue(t, producer, 1, "q") }, "q")
}

// awaitWakeup runs send until s delivers a wake-up for queue, failing after
// 10 s. send repeats because the listener may not be connected yet.
func awaitWakeup(t *testing.T, s store.Store, send func(), queue string) {
	t.Helper()
	wake, stop := s.Wakeups()
	defer stop()
	deadline := time.After(10 * time.Second)
	for {
		send()
		select {
		case q := <-wake:
			if q == queue {
				return
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no wake-up for queue %s within 10 s", queue)
		}
	}
}
