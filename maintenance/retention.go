package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// Retention defaults.
const (
	// DefaultRetention is how long a terminal job is kept after it finished.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultHeartbeatRetention is how long heartbeat events are kept.
	DefaultHeartbeatRetention = 24 * time.Hour
	// DefaultRetentionInterval is the time between retention passes.
	DefaultRetentionInterval = time.Minute
)

// RetentionConfig configures [Retention].
type RetentionConfig struct {
	// Retention is how long a terminal job is kept, with its events and
	// provenance, after it finished. A negative value keeps them forever.
	// Defaults to DefaultRetention (7 days).
	Retention time.Duration
	// HeartbeatRetention is how long heartbeat events are kept; they are the
	// bulk of a long job's events and replay does not need them. A negative
	// value keeps them forever. Defaults to DefaultHeartbeatRetention (24h).
	HeartbeatRetention time.Duration
	// Interval is the time between passes. Defaults to
	// DefaultRetentionInterval (1 minute).
	Interval time.Duration
	// Limit is the most jobs, and the most heartbeat events, one store call
	// deletes. Defaults to DefaultLimit (1000).
	Limit int
	// Logger receives failed passes and what each pass deleted. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times the passes and says how old a row is. Defaults to the
	// system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c RetentionConfig) WithDefaults() RetentionConfig {
	c.Retention = orDefault(c.Retention, DefaultRetention)
	c.HeartbeatRetention = orDefault(c.HeartbeatRetention, DefaultHeartbeatRetention)
	c.Interval = orDefault(c.Interval, DefaultRetentionInterval)
	c.Limit = orDefault(c.Limit, DefaultLimit)
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c RetentionConfig) validate() error { return validateCommon("retention", c.Interval, c.Limit) }

// Retention deletes terminal jobs (with their events and provenance) once
// they are older than Retention, and heartbeat events older than
// HeartbeatRetention. `stint verify` stays clean: whole jobs go at once, and
// replay tolerates the gaps pruned heartbeats leave.
//
// Where the store keeps history in time partitions (PostgreSQL), every pass
// first makes the coming partitions (store.EnsurePartitions), also when
// both retentions are negative and nothing is ever deleted.
type Retention struct {
	l     *loop
	store store.Store
	cfg   RetentionConfig
	now   nowFunc
}

// NewRetention returns a retention service over s; cfg may be nil for the defaults.
func NewRetention(s store.Store, cfg *RetentionConfig) (*Retention, error) {
	c := RetentionConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	r := &Retention{store: s, cfg: c, now: storeNow}
	r.l = newLoop("retention", c.Interval, c.Clock, c.Logger, r.pass)
	return r, nil
}

// cutoffs returns the store's parameters at now; a zero time deletes nothing.
func (r *Retention) cutoffs(now time.Time) store.RetainParams {
	p := store.RetainParams{Limit: r.cfg.Limit}
	if r.cfg.Retention >= 0 {
		p.FinishedBefore = now.Add(-r.cfg.Retention)
	}
	if r.cfg.HeartbeatRetention >= 0 {
		p.HeartbeatsBefore = now.Add(-r.cfg.HeartbeatRetention)
	}
	return p
}

func (r *Retention) pass(ctx context.Context) (int, error) {
	// A failure to make partitions is logged, not fatal to the pass: rows
	// of a period without its partition land in the default one.
	if err := store.EnsurePartitions(ctx, r.store, r.now()); err != nil && ctx.Err() == nil {
		r.l.logger.Error("retention: could not make the coming history partitions; retrying at the next pass", "error", err)
	}
	p := r.cutoffs(r.cfg.Clock.Now())
	if p.FinishedBefore.IsZero() && p.HeartbeatsBefore.IsZero() {
		return 0, nil
	}
	var total store.RetainResult
	for ctx.Err() == nil {
		res, err := r.store.JobRetain(ctx, &p)
		total.Jobs += res.Jobs
		total.Events += res.Events
		total.Heartbeats += res.Heartbeats
		total.Outbox += res.Outbox
		total.Runs += res.Runs
		if err != nil {
			return total.Jobs + total.Heartbeats, fmt.Errorf("retention: %w", err)
		}
		if res.Jobs < p.Limit && res.Heartbeats < p.Limit && res.Outbox < p.Limit && res.Runs < p.Limit {
			break
		}
	}
	if total.Jobs > 0 || total.Heartbeats > 0 || total.Outbox > 0 || total.Runs > 0 {
		r.l.logger.Info("deleted old jobs and heartbeat events", "jobs", total.Jobs, "job_events", total.Events, "heartbeats", total.Heartbeats,
			"outbox", total.Outbox, "runs", total.Runs)
	}
	return total.Jobs + total.Heartbeats, nil
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (r *Retention) Start(ctx context.Context) error { return r.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (r *Retention) Stop() { r.l.Stop() }

// Wake asks for a pass now.
func (r *Retention) Wake() { r.l.Wake() }
