package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

// channelPrefix starts the name of the notification channel; the schema
// name ends it, so installations sharing a database do not wake each other.
const channelPrefix = "stint_"

// Reconnect backoff of the listener.
const (
	listenRetryBase = 50 * time.Millisecond
	listenRetryMax  = 5 * time.Second
)

// Payload prefixes of a notification: a queue that gained claimable jobs,
// or a job whose lease changed under its owner.
const (
	queuePrefix = "q:"
	jobPrefix   = "j:"
)

// Notify sends, at commit, one notification per queue not yet notified in
// this transaction, and one per job. A notification per enqueued row would
// serialize commits on PostgreSQL's notification queue lock and cap enqueue
// throughput.
func (t *tx) Notify(ctx context.Context, n store.Notice) error {
	if !t.notify {
		return nil
	}
	var fresh []string
	for _, q := range n.Queues {
		if !t.notified[q] {
			if t.notified == nil {
				t.notified = map[string]bool{}
			}
			t.notified[q] = true
			fresh = append(fresh, queuePrefix+q)
		}
	}
	for _, id := range n.Jobs {
		fresh = append(fresh, jobPrefix+id)
	}
	if len(fresh) == 0 {
		return nil
	}
	// Like the writes, it goes out with COMMIT; PostgreSQL delivers it
	// only if the transaction commits.
	t.pending.Queue(qNotify, t.channel, fresh).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: notify %v: %w", fresh, err)
	})
	return nil
}

// Listen delivers the queue names other processes (and this one) notify,
// over a connection of its own, until ctx ends. When the connection fails it
// reconnects with backoff; notifications sent meanwhile are lost, which
// claimers make up for by polling. With DisableNotify it returns at once.
func (d *Driver) Listen(ctx context.Context, deliver func(store.Notice)) error {
	if d.opts.DisableNotify {
		return nil
	}
	wait := listenRetryBase
	for {
		connected, err := d.listenOnce(ctx, deliver)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			wait = listenRetryBase
		}
		d.log.WarnContext(ctx, "postgres: listener lost its connection; reconnecting", "channel", d.opts.channel(), "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listenOnce connects, listens and delivers until the connection fails or
// ctx ends. connected tells whether LISTEN took effect.
func (d *Driver) listenOnce(ctx context.Context, deliver func(store.Notice)) (connected bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, listenSQL(d.opts.channel())); err != nil {
		return false, err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		switch {
		case strings.HasPrefix(n.Payload, queuePrefix):
			deliver(store.Notice{Queues: []string{strings.TrimPrefix(n.Payload, queuePrefix)}})
		case strings.HasPrefix(n.Payload, jobPrefix):
			deliver(store.Notice{Jobs: []string{strings.TrimPrefix(n.Payload, jobPrefix)}})
		}
	}
}
