package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
// the same with the lowest claim key among them (markPrefix, see
// markPayload), or a job whose lease changed under its owner.
const (
	queuePrefix = "q:"
	markPrefix  = "k:"
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
	for _, q := range n.Queues {
		if !t.notified[q] {
			if t.notified == nil {
				t.notified = map[string]bool{}
			}
			t.notified[q] = true
			t.noticeQueues = append(t.noticeQueues, q)
		}
	}
	t.noticeJobs = append(t.noticeJobs, n.Jobs...)
	return nil
}

// flushNotices queues the transaction's notifications to go out with its
// COMMIT; PostgreSQL delivers them only if it commits. A queue into which
// the transaction wrote queued jobs gets a markPrefix notification, which
// also lowers the low-water marks of every listening process, whether or
// not Notify named it.
func (t *tx) flushNotices() {
	if !t.notify {
		return
	}
	var payloads []string
	for q, k := range t.lows {
		payloads = append(payloads, markPayload(q, k))
	}
	slices.Sort(payloads)
	for _, q := range t.noticeQueues {
		if _, ok := t.lows[q]; !ok {
			payloads = append(payloads, queuePrefix+q)
		}
	}
	for _, id := range t.noticeJobs {
		payloads = append(payloads, jobPrefix+id)
	}
	t.noticeQueues, t.noticeJobs = nil, nil
	if len(payloads) == 0 {
		return
	}
	t.pending.Queue(qNotify, t.channel, payloads).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: notify %v: %w", payloads, err)
	})
}

// markPayload is the notification of queue with the key k:
// "k:<priority>:<created_at in Unix microseconds>:<queue>".
func markPayload(queue string, k claimKey) string {
	return markPrefix + strconv.Itoa(k.priority) + ":" + strconv.FormatInt(k.at.UnixMicro(), 10) + ":" + queue
}

// parseMarkPayload reads what markPayload wrote (without its prefix).
func parseMarkPayload(s string) (string, claimKey, bool) {
	p, rest, ok1 := strings.Cut(s, ":")
	at, queue, ok2 := strings.Cut(rest, ":")
	pri, err1 := strconv.Atoi(p)
	us, err2 := strconv.ParseInt(at, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return "", claimKey{}, false
	}
	return queue, claimKey{priority: pri, at: time.UnixMicro(us).UTC()}, true
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
	// Notifications sent while no connection listened are lost, and with
	// them the keys that lower the low-water marks: start from the heads.
	d.lw.forget()
	d.heard("listen")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		d.handle(ctx, n.Payload, deliver)
		d.heard(n.Payload)
	}
}

// handle acts on one notification's payload.
func (d *Driver) handle(ctx context.Context, payload string, deliver func(store.Notice)) {
	switch {
	case strings.HasPrefix(payload, queuePrefix):
		deliver(store.Notice{Queues: []string{strings.TrimPrefix(payload, queuePrefix)}})
	case strings.HasPrefix(payload, markPrefix):
		queue, k, ok := parseMarkPayload(strings.TrimPrefix(payload, markPrefix))
		if !ok {
			d.log.WarnContext(ctx, "postgres: unreadable notification; forgetting the claim marks", "payload", payload)
			d.lw.forget()
			return
		}
		// Lower before waking the claimers, so they seek below it.
		d.lw.lower(queue, k, false)
		deliver(store.Notice{Queues: []string{queue}})
	case strings.HasPrefix(payload, jobPrefix):
		deliver(store.Notice{Jobs: []string{strings.TrimPrefix(payload, jobPrefix)}})
	}
}

// heard tells a test's hook what the listener did.
func (d *Driver) heard(event string) {
	if d.opts.onListen != nil {
		d.opts.onListen(event)
	}
}
