package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// CancelFinalizerConfig configures a [CancelFinalizer].
type CancelFinalizerConfig struct {
	// Interval is the time between passes: how long after its cancel
	// deadline a job may stay cancel_requested. Defaults to DefaultInterval (1s).
	Interval time.Duration
	// Limit is the most jobs one store call cancels. Defaults to
	// DefaultLimit (1000).
	Limit int
	// Logger receives failed passes and what each pass changed. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times the passes. Defaults to the system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c CancelFinalizerConfig) WithDefaults() CancelFinalizerConfig {
	c.Interval = orDefault(c.Interval, DefaultInterval)
	c.Limit = orDefault(c.Limit, DefaultLimit)
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c CancelFinalizerConfig) validate() error {
	return validateCommon("cancel finalizer", c.Interval, c.Limit)
}

// CancelFinalizer cancels soft-cancelled jobs whose owner did not
// acknowledge before the cancel deadline (reason cancel_deadline). The
// owner's lease is revoked with it: its late writes are rejected.
type CancelFinalizer struct {
	l     *loop
	store store.Store
	cfg   CancelFinalizerConfig
	now   nowFunc
}

// NewCancelFinalizer returns a cancel finalizer over s; cfg may be nil for
// the defaults.
func NewCancelFinalizer(s store.Store, cfg *CancelFinalizerConfig) (*CancelFinalizer, error) {
	c := CancelFinalizerConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	f := &CancelFinalizer{store: s, cfg: c, now: storeNow}
	f.l = newLoop("cancel_finalizer", c.Interval, c.Clock, c.Logger, f.pass)
	return f, nil
}

func (f *CancelFinalizer) pass(ctx context.Context) (int, error) {
	n, err := drain(ctx, f.cfg.Limit, func(ctx context.Context) (int, error) {
		return f.store.JobForceCancelDue(ctx, &store.MaintainParams{Limit: f.cfg.Limit, ActorID: "cancel_finalizer", Now: f.now()})
	})
	if n > 0 {
		f.l.logger.Info("cancelled jobs whose owner did not acknowledge the cancel in time", "jobs", n)
	}
	return n, err
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (f *CancelFinalizer) Start(ctx context.Context) error { return f.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (f *CancelFinalizer) Stop() { f.l.Stop() }

// Wake asks for a pass now.
func (f *CancelFinalizer) Wake() { f.l.Wake() }
