package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/store"
)

// Bridge connects a store to a NATS JetStream bus: intake of JobRequests,
// dispatch to bus workers and their results, and (through [Bridge.Transport]
// and the outbox) events out.
type Bridge struct {
	st  store.Store
	cfg Config
	log *slog.Logger
	m   *metrics
	ev  *eventCache
	out *inflight

	// Fault hooks of the tests: enqueueHook sees the job_ids of each
	// enqueue transaction before it runs; publishHook is called with each
	// event's Nats-Msg-Id before its publish, and an error it returns is
	// that publish's failure.
	enqueueHook func(jobIDs []string)
	publishHook func(msgID string) error

	mu     sync.Mutex
	nc     *nats.Conn
	js     jetstream.JetStream
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Bridge over st; it connects at Start.
func New(st store.Store, cfg Config) (*Bridge, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(c.Registerer)
	if err != nil {
		return nil, err
	}
	return &Bridge{st: st, cfg: c, log: c.Logger.With("component", "bus"), m: m, ev: newEventCache(), out: newInflight()}, nil
}

// Start connects to NATS, creates the streams, consumers and the outbox
// subscription that are missing, and starts intake, dispatch and results.
// It fails when the bus cannot be set up within ctx or 30s; once started,
// the bridge reconnects on its own (with backoff) whenever the bus goes away.
func (b *Bridge) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return nil
	}
	nc, err := nats.Connect(b.cfg.URL, nats.Name("stint-bus-"+b.cfg.Name), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true), nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.log.Warn("bus disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { b.log.Info("bus reconnected", "server", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return fmt.Errorf("bus: connect to %s: %w", b.cfg.URL, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncPending))
	if err != nil {
		nc.Close()
		return fmt.Errorf("bus: %w", err)
	}
	b.nc, b.js = nc, js
	if err := b.setupRetrying(ctx); err != nil {
		nc.Close()
		return fmt.Errorf("bus: set up the streams on %s: %w (is JetStream enabled? nats-server -js)", b.cfg.URL, err)
	}
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = cancel
	for _, loop := range []func(context.Context){b.intake, b.results, b.dispatch} {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			loop(run)
		}()
	}
	b.log.Info("bus bridge started", "url", nc.ConnectedUrlRedacted(), "requests", b.cfg.RequestSubjects, "queue", b.cfg.Queue, "worker_topics", b.cfg.WorkerTopics)
	return nil
}

// Stop ends the loops, waits for them, and closes the connection. A message
// in flight is not acked, so JetStream delivers it again (to this bridge's
// successor): nothing is lost, and nothing is done twice.
func (b *Bridge) Stop() {
	b.mu.Lock()
	cancel, nc := b.cancel, b.nc
	b.cancel = nil
	b.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	b.wg.Wait()
	if nc != nil {
		_ = nc.Drain()
	}
}

// setupWithin bounds the set-up at Start, and setupAttempt each try of it:
// a server restarting meanwhile loses requests, which a new try repeats.
const (
	setupWithin  = 30 * time.Second
	setupAttempt = 3 * time.Second
)

// setupRetrying runs setup until it succeeds or setupWithin passes.
func (b *Bridge) setupRetrying(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, setupWithin)
	defer cancel()
	for n := 1; ; n++ {
		try, done := context.WithTimeout(ctx, setupAttempt)
		err := b.setup(try)
		done()
		if err == nil {
			return nil
		}
		if n == 1 || n%5 == 0 {
			b.log.Warn("bus set-up failed; retrying", "err", err, "attempt", n)
		}
		if ctx.Err() != nil || !b.pause(ctx, backoff(n)) {
			return err
		}
	}
}

// setup creates what is missing: the four streams, the bridge's consumers
// and its outbox subscription. What exists is left as it is.
func (b *Bridge) setup(ctx context.Context) error {
	if _, err := b.consumer(ctx, b.cfg.RequestStream); err != nil {
		return err
	}
	if _, err := b.consumer(ctx, b.cfg.ResultStream); err != nil {
		return err
	}
	if _, err := b.stream(ctx, b.cfg.DispatchStream); err != nil {
		return err
	}
	if _, err := b.stream(ctx, b.cfg.EventStream); err != nil {
		return err
	}
	return b.subscribe(ctx)
}

// connected reports whether the bus is reachable now.
func (b *Bridge) connected() bool { return b.nc != nil && b.nc.IsConnected() }

// asyncPending bounds the publishes awaiting their acknowledgement (event
// batches of several outbox workers, and dispatches).
const asyncPending = 16384

// reconnectDelay backs off from 100ms to 5s between reconnect attempts.
func reconnectDelay(attempts int) time.Duration {
	d := 100 * time.Millisecond << min(attempts, 6)
	return min(d, 5*time.Second)
}

// pause waits d or until ctx ends; it reports whether to go on.
func (b *Bridge) pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.cfg.Clock.After(d):
		return true
	}
}

// backoff is the wait after the n-th consecutive failure of a loop.
func backoff(n int) time.Duration {
	return min(50*time.Millisecond<<min(n, 7), 5*time.Second)
}

// isTimeout reports a fetch that simply found nothing.
func isTimeout(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}
