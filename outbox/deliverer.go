package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Config configures a [Deliverer].
type Config struct {
	// Workers deliver in parallel; order per aggregate holds whatever their
	// number, on one node or many. Defaults to 4.
	Workers int
	// Limit is the most messages one worker claims at a time. Defaults to 16.
	Limit int
	// BatchLimit is the most messages of a [BatchSender]'s webhooks one
	// worker claims at a time. Defaults to 1000.
	BatchLimit int
	// BatchWorkers is how many of the Workers claim for the BatchSender
	// (the others deliver over HTTP only). Defaults to Workers (all); at
	// most Workers.
	BatchWorkers int
	// Timeout bounds one HTTP request. Defaults to 10s.
	Timeout time.Duration
	// Lease is how long a claimed message is held before another deliverer
	// may take it; it must exceed Timeout. Defaults to 3 × Timeout.
	Lease time.Duration
	// MaxAttempts dead-letters a message after this many failed attempts.
	// Defaults to 10.
	MaxAttempts int
	// Backoff schedules retries. Defaults to lifecycle.DefaultBackoff.
	Backoff lifecycle.Backoff
	// MaxRetryAfter caps a receiver's Retry-After. Defaults to 1h.
	MaxRetryAfter time.Duration
	// Interval is how long an idle worker waits before looking again.
	// Defaults to 1s.
	Interval time.Duration
	// Client sends the requests. Defaults to a client with Timeout. When its
	// Transport implements [BatchSender], the webhooks it handles are
	// delivered through it, many messages at a time.
	Client *http.Client
	// Logger defaults to slog.Default(); Clock to the system clock.
	Logger *slog.Logger
	Clock  clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Workers, 4)
	def(&c.Limit, 16)
	def(&c.BatchLimit, 1000)
	def(&c.BatchWorkers, c.Workers)
	c.BatchWorkers = min(c.BatchWorkers, c.Workers)
	def(&c.MaxAttempts, 10)
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 3 * c.Timeout
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Hour
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	c.Backoff = c.Backoff.OrDefault()
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

func (c Config) validate() error {
	if c.Lease <= c.Timeout {
		return fmt.Errorf("outbox: Lease %s must exceed Timeout %s, or a slow delivery is taken by another deliverer", c.Lease, c.Timeout)
	}
	return nil
}

// Deliverer is the outbox delivery service: Workers goroutines claim due
// messages and deliver them. It is safe to run on every node.
type Deliverer struct {
	store store.Store
	cfg   Config
	log   *slog.Logger
	batch BatchSender // nil: every message goes over HTTP
	hooks batchHooks

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Deliverer over s; cfg may be nil for the defaults.
func New(s store.Store, cfg *Config) (*Deliverer, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := &Deliverer{store: s, cfg: c, log: c.Logger.With("component", "outbox")}
	if bs, ok := c.Client.Transport.(BatchSender); ok {
		d.batch = bs
	}
	return d, nil
}

// Start starts the workers; they run until Stop or ctx ends.
func (d *Deliverer) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("outbox: not started: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return nil
	}
	ctx, d.cancel = context.WithCancel(ctx)
	for i := range d.cfg.Workers {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.work(ctx, i < d.cfg.BatchWorkers)
		}()
	}
	return nil
}

// Stop ends the workers and waits for them; a delivery in flight is
// abandoned (and delivered again after its lease).
func (d *Deliverer) Stop() {
	d.mu.Lock()
	cancel := d.cancel
	d.cancel = nil
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	d.wg.Wait()
}

func (d *Deliverer) work(ctx context.Context, batch bool) {
	for ctx.Err() == nil {
		n, err := d.pass(ctx, batch)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("outbox pass failed", "err", err)
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.cfg.Clock.After(d.cfg.Interval):
		}
	}
}

// Pass claims up to Limit messages and delivers them in order, returning
// how many it claimed; with a [BatchSender], it first claims and sends up to
// BatchLimit messages of the sender's webhooks.
func (d *Deliverer) Pass(ctx context.Context) (int, error) { return d.pass(ctx, true) }

// pass is Pass; only with batch does it claim for the BatchSender.
func (d *Deliverer) pass(ctx context.Context, batch bool) (int, error) {
	var n int
	var skip []string
	if d.batch != nil {
		ids, others, err := d.batchHookIDs(ctx)
		if err != nil {
			return 0, err
		}
		if batch && len(ids) > 0 && d.batch.Available() {
			k, err := d.passBatch(ctx, ids)
			if err != nil {
				return k, err
			}
			n = k
		}
		if n > 0 && !others {
			// Only the sender's webhooks: the claim below would walk the
			// same pending messages to find none. It runs on a pass that
			// found nothing (it also dead-letters the messages of removed
			// webhooks), so a busy worker goes straight on with the batch.
			return n, nil
		}
		skip = ids
	}
	now := d.cfg.Clock.Now()
	ds, err := d.store.OutboxClaim(ctx, &store.OutboxClaimParams{Limit: d.cfg.Limit, Lease: d.cfg.Lease, Now: &now, SkipWebhooks: skip})
	if err != nil {
		return n, err
	}
	for _, dl := range ds {
		if err := d.deliver(ctx, dl); err != nil {
			return n + len(ds), err
		}
	}
	return n + len(ds), nil
}

// deliver sends one message and records the outcome.
func (d *Deliverer) deliver(ctx context.Context, dl store.OutboxDelivery) error {
	m := dl.Message
	retryAfter, err := d.send(ctx, dl)
	if ctx.Err() != nil {
		return ctx.Err() // stopping: the lease hands the message on
	}
	if err == nil {
		now := d.cfg.Clock.Now()
		err = d.store.OutboxDelivered(ctx, &store.OutboxReportParams{ID: m.ID, Attempt: m.Attempts, Now: &now})
		if errors.Is(err, lifecycle.ErrStaleLease) {
			return nil // our lease ran out and another deliverer took over
		}
		return err
	}
	return d.recordFailed(ctx, m, dl.Webhook.ID, err, retryAfter)
}

// recordFailed records a failed attempt: retried after the backoff (or the
// receiver's Retry-After), or dead when the failure is permanent or the
// attempts are spent, unless the receiver was merely unavailable.
func (d *Deliverer) recordFailed(ctx context.Context, m store.OutboxMessage, webhook string, cause error, retryAfter time.Duration) error {
	now := d.cfg.Clock.Now()
	var perm *permanent
	p := &store.OutboxReportParams{ID: m.ID, Attempt: m.Attempts, Now: &now, Error: cause.Error()}
	p.Dead = (errors.As(cause, &perm) || m.Attempts >= d.cfg.MaxAttempts) && !errors.Is(cause, ErrUnavailable)
	wait := d.cfg.Backoff.Delay(m.Key(), m.Attempts)
	if retryAfter > 0 {
		wait = min(retryAfter, d.cfg.MaxRetryAfter)
	}
	at := now.Add(wait)
	p.RetryAt = &at
	if webhook == "" {
		webhook = m.WebhookID
	}
	d.log.Info("webhook delivery failed", "message", m.ID, "webhook", webhook, "attempt", m.Attempts, "dead", p.Dead, "err", cause)
	err := d.store.OutboxFailed(ctx, p)
	if errors.Is(err, lifecycle.ErrStaleLease) {
		return nil // our lease ran out and another deliverer took over
	}
	return err
}

// permanent marks a failure that retrying will not fix (a 4xx other than
// 408 and 429).
type permanent struct{ msg string }

func (p *permanent) Error() string { return p.msg }

// send POSTs the message; it returns the receiver's Retry-After, if any.
func (d *Deliverer) send(ctx context.Context, dl store.OutboxDelivery) (time.Duration, error) {
	m, w := dl.Message, dl.Webhook
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return 0, &permanent{fmt.Sprintf("bad webhook url: %v", err)}
	}
	ts := d.cfg.Clock.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stint-outbox")
	req.Header.Set(HeaderID, m.Key())
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(w.Secret, m.Key(), ts, m.Payload))
	req.Header.Set(HeaderIdempotencyKey, m.Key())
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return 0, nil
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return retryAfter(resp.Header.Get("Retry-After"), d.cfg.Clock.Now()),
			fmt.Errorf("%s answered %s: %s", w.URL, resp.Status, strings.TrimSpace(string(snippet)))
	default:
		return 0, &permanent{fmt.Sprintf("%s answered %s: %s", w.URL, resp.Status, strings.TrimSpace(string(snippet)))}
	}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date. A
// number of seconds too large for a Duration is the longest Duration (the
// caller caps it), never a product that wrapped around.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64); err == nil && s >= 0 {
		if s > math.MaxInt64/int64(time.Second) {
			return math.MaxInt64
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
