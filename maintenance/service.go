package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// DefaultLimit is how many jobs one store call changes at most, unless a
// service's Config says otherwise.
const DefaultLimit = 1000

// DefaultInterval is how often the transition services (scheduler, reaper,
// timeouts, cancel finalizer) make a pass. A pass that finds nothing due is
// one indexed query per verb, so a second costs little and keeps every
// transition within about a second of being due.
const DefaultInterval = time.Second

// loop is the engine every service shares: it calls pass at Start, every
// interval by its clock, and on Wake, until Stop. It can be started again
// after Stop, which the Maintainer does on each term it leads.
type loop struct {
	name     string
	interval time.Duration
	clock    clock.Clock
	logger   *slog.Logger
	pass     func(ctx context.Context) (int, error)

	wake chan struct{}

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	// passed, when set (by tests), receives the outcome of every pass after
	// the timer of the next one is armed, so a test that moves the clock
	// after receiving is sure to fire it.
	passed chan passResult
}

type passResult struct {
	n   int
	err error
}

func newLoop(name string, interval time.Duration, c clock.Clock, logger *slog.Logger, pass func(context.Context) (int, error)) *loop {
	return &loop{
		name: name, interval: interval, clock: c, pass: pass,
		logger: logger.With("service", name),
		wake:   make(chan struct{}, 1),
	}
}

// Start begins the passes; the first runs at once. Starting a running
// service does nothing.
func (l *loop) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("maintenance: %s: not started: %w", l.name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx, l.done)
	return nil
}

// Stop ends the passes and returns once the current one has ended; a store
// call in flight sees its context cancelled.
func (l *loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Wake asks for a pass now. It never blocks: wakes that arrive during a pass
// fold into one more pass.
func (l *loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// running reports whether the service is started.
func (l *loop) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancel != nil
}

func (l *loop) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		n, err := l.pass(ctx)
		if err != nil && ctx.Err() == nil {
			l.logger.Error("maintenance pass failed; retrying at the next interval", "error", err, "interval", l.interval)
		}
		next := l.clock.After(l.interval)
		if l.passed != nil {
			select {
			case l.passed <- passResult{n, err}:
			case <-ctx.Done():
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-next:
		case <-l.wake:
		}
	}
}

// drain calls verb until it changes fewer than limit jobs (the rest of the
// backlog is not due yet) or fails, and returns how many it changed in all.
func drain(ctx context.Context, limit int, verb func(ctx context.Context) (int, error)) (int, error) {
	total := 0
	for {
		n, err := verb(ctx)
		total += n
		if err != nil || n < limit || ctx.Err() != nil {
			return total, err
		}
	}
}

// validateCommon checks the fields every service's Config has.
func validateCommon(service string, interval time.Duration, limit int) error {
	switch {
	case interval <= 0:
		return fmt.Errorf("maintenance: %s: Interval is %s: use a positive duration, or 0 for the default", service, interval)
	case limit < 1 || limit > store.MaxBatch:
		return fmt.Errorf("maintenance: %s: Limit is %d: use 1 to %d, or 0 for the default", service, limit, store.MaxBatch)
	}
	return nil
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// nowFunc gives the Now a service passes to the store: nil, the store's own
// clock, in production. Tests of a store whose clock cannot be set (such as
// PostgreSQL's now()) pass their manual clock's time instead.
type nowFunc func() *time.Time

func storeNow() *time.Time { return nil }

func clockNow(c clock.Clock) nowFunc {
	return func() *time.Time {
		t := c.Now()
		return &t
	}
}
