package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// ReaperConfig configures a [Reaper].
type ReaperConfig struct {
	// Interval is the time between passes: how long after its lease expires
	// a job may wait to be stalled. Defaults to DefaultInterval (1s).
	Interval time.Duration
	// Limit is the most jobs one store call changes. Defaults to
	// DefaultLimit (1000).
	Limit int
	// Logger receives failed passes and what each pass changed. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times the passes. Defaults to the system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c ReaperConfig) WithDefaults() ReaperConfig {
	c.Interval = orDefault(c.Interval, DefaultInterval)
	c.Limit = orDefault(c.Limit, DefaultLimit)
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c ReaperConfig) validate() error { return validateCommon("reaper", c.Interval, c.Limit) }

// Reaper finds jobs whose owner stopped heartbeating. Claimed and running
// jobs whose lease expired are stalled (owner and lease cleared, so the old
// owner's late writes are rejected); cancel_requested ones are cancelled,
// since their owner can no longer acknowledge. Stalled jobs, including those
// their owner released, are then requeued, or dead-lettered (reason
// lease_expired or exhausted_retries) when no attempts are left.
type Reaper struct {
	l     *loop
	store store.Store
	cfg   ReaperConfig
	now   nowFunc
}

// NewReaper returns a reaper over s; cfg may be nil for the defaults.
func NewReaper(s store.Store, cfg *ReaperConfig) (*Reaper, error) {
	c := ReaperConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	r := &Reaper{store: s, cfg: c, now: storeNow}
	r.l = newLoop("reaper", c.Interval, c.Clock, c.Logger, r.pass)
	return r, nil
}

// pass stalls first, so a job whose lease expired is requeued in the same pass.
func (r *Reaper) pass(ctx context.Context) (int, error) {
	stalled, err := drain(ctx, r.cfg.Limit, func(ctx context.Context) (int, error) {
		return r.store.JobStallExpired(ctx, r.params())
	})
	if err != nil {
		return stalled, err
	}
	requeued, err := drain(ctx, r.cfg.Limit, func(ctx context.Context) (int, error) {
		return r.store.JobRequeueStalled(ctx, r.params())
	})
	if stalled > 0 || requeued > 0 {
		r.l.logger.Info("reaped jobs whose lease expired", "stalled", stalled, "requeued_or_dead_lettered", requeued)
	}
	return stalled + requeued, err
}

func (r *Reaper) params() *store.MaintainParams {
	return &store.MaintainParams{Limit: r.cfg.Limit, ActorID: "reaper", Now: r.now()}
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (r *Reaper) Start(ctx context.Context) error { return r.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (r *Reaper) Stop() { r.l.Stop() }

// Wake asks for a pass now, for example after a worker released its jobs.
func (r *Reaper) Wake() { r.l.Wake() }
