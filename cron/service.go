package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// Config configures a [Service].
type Config struct {
	// Interval is the time between passes over the schedules. Defaults to
	// one second, so a tick is enqueued within about a second of its time.
	Interval time.Duration
	// Logger receives failed passes and the ticks fired. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock decides which ticks are due. Defaults to the system clock.
	Clock clock.Clock
	// Grace is how late a tick may be fired under the "latest" policy
	// along with the ones after it (see [Due]). Defaults to DefaultGrace.
	Grace time.Duration
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	return c
}

// Service fires the ticks of every schedule in the store, one [Service.Pass]
// at a time. The maintenance package runs its passes every Interval where the
// singleton maintenance services run (on the elected leader): a second
// Service at once is harmless (each tick is still enqueued once) but
// wasteful.
type Service struct {
	store store.ScheduleStore
	cfg   Config
	log   *slog.Logger
}

// NewService returns a Service over s; cfg may be nil for the defaults. It
// fails when s keeps no schedules.
func NewService(s store.Store, cfg *Config) (*Service, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if c.Interval < 0 || c.Grace < 0 {
		return nil, fmt.Errorf("cron: Interval %s, Grace %s: use positive durations, or 0 for the defaults", c.Interval, c.Grace)
	}
	ss, err := store.Schedules(s)
	if err != nil {
		return nil, fmt.Errorf("cron: %w", err)
	}
	return &Service{store: ss, cfg: c, log: c.Logger.With("service", "cron")}, nil
}

// Config returns the service's configuration, defaults filled in.
func (sv *Service) Config() Config { return sv.cfg }

// Pass fires every tick due at the clock's now and returns how many it
// enqueued. A schedule whose expression no longer parses is logged and
// skipped; the others still fire.
func (sv *Service) Pass(ctx context.Context) (int, error) {
	all, err := sv.store.ScheduleList(ctx)
	if err != nil {
		return 0, err
	}
	now := sv.cfg.Clock.Now()
	n := 0
	var errs []error
	for _, s := range all {
		e, err := Parse(s.Expr, s.TimeZone)
		if err != nil {
			sv.log.Error("schedule skipped: its expression does not parse", "schedule", s.Name, "error", err)
			continue
		}
		prev := s.LastTick
		fire, skipped := Due(e, s, now, sv.cfg.Grace)
		if skipped > 0 {
			sv.log.Warn("missed ticks skipped by the schedule's policy", "schedule", s.Name, "missed", s.Missed, "skipped", skipped)
		}
		for _, tick := range fire {
			res, fired, err := sv.store.ScheduleFire(ctx, &store.ScheduleFireParams{Name: s.Name, Prev: prev, Tick: tick, Enqueue: true})
			if err != nil {
				errs = append(errs, fmt.Errorf("schedule %q, tick %s: %w", s.Name, tick.Format(time.RFC3339), err))
				break
			}
			if !fired {
				break // another node fired it, or the schedule changed: next pass
			}
			if res.Job.ID != "" {
				n++
				sv.log.Debug("tick fired", "schedule", s.Name, "tick", tick, "job", res.Job.ID)
			}
			t := tick
			prev = &t
		}
	}
	return n, errors.Join(errs...)
}
