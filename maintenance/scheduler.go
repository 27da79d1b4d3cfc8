package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// SchedulerConfig configures a [Scheduler].
type SchedulerConfig struct {
	// Interval is the time between passes. Defaults to DefaultInterval (1s).
	Interval time.Duration
	// Limit is the most jobs one store call promotes. Defaults to
	// DefaultLimit (1000).
	Limit int
	// Logger receives failed passes and what each pass changed. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times the passes. Defaults to the system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c SchedulerConfig) WithDefaults() SchedulerConfig {
	c.Interval = orDefault(c.Interval, DefaultInterval)
	c.Limit = orDefault(c.Limit, DefaultLimit)
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c SchedulerConfig) validate() error { return validateCommon("scheduler", c.Interval, c.Limit) }

// Scheduler promotes scheduled and retrying jobs whose run_at has come to
// queued, where workers can claim them.
type Scheduler struct {
	l     *loop
	store store.Store
	cfg   SchedulerConfig
	now   nowFunc
}

// NewScheduler returns a scheduler over s; cfg may be nil for the defaults.
func NewScheduler(s store.Store, cfg *SchedulerConfig) (*Scheduler, error) {
	c := SchedulerConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	sc := &Scheduler{store: s, cfg: c, now: storeNow}
	sc.l = newLoop("scheduler", c.Interval, c.Clock, c.Logger, sc.pass)
	return sc, nil
}

func (sc *Scheduler) pass(ctx context.Context) (int, error) {
	n, err := drain(ctx, sc.cfg.Limit, func(ctx context.Context) (int, error) {
		return sc.store.JobPromoteDue(ctx, &store.MaintainParams{Limit: sc.cfg.Limit, ActorID: "scheduler", Now: sc.now()})
	})
	if n > 0 {
		sc.l.logger.Debug("promoted due jobs", "jobs", n)
	}
	return n, err
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (sc *Scheduler) Start(ctx context.Context) error { return sc.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (sc *Scheduler) Stop() { sc.l.Stop() }

// Wake asks for a pass now, for example after enqueueing a job due soon.
func (sc *Scheduler) Wake() { sc.l.Wake() }
