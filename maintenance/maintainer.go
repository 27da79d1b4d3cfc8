package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/store"
)

// Config configures a [Maintainer]: one Config per service, and the election.
// Each service's Logger and Clock default to the Maintainer's.
type Config struct {
	Scheduler       SchedulerConfig
	Reaper          ReaperConfig
	Timeouts        TimeoutsConfig
	CancelFinalizer CancelFinalizerConfig
	Retention       RetentionConfig
	Election        ElectorConfig
	// Cron configures the service that fires periodic jobs' ticks; it runs
	// on the leader like the others when the store keeps schedules.
	Cron cron.Config
	// SingleNode runs the services without electing a leader: for a database
	// no other stint process maintains. Defaults to false: elect, which is
	// always safe and costs one small write every Election.TTL/3.
	SingleNode bool
	// Logger receives what the services and the election do. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times everything. Defaults to the system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	lg, ck := c.Logger.With("component", "maintenance"), c.Clock
	c.Scheduler.Logger, c.Scheduler.Clock = orDefault(c.Scheduler.Logger, lg), orDefault(c.Scheduler.Clock, ck)
	c.Reaper.Logger, c.Reaper.Clock = orDefault(c.Reaper.Logger, lg), orDefault(c.Reaper.Clock, ck)
	c.Timeouts.Logger, c.Timeouts.Clock = orDefault(c.Timeouts.Logger, lg), orDefault(c.Timeouts.Clock, ck)
	c.CancelFinalizer.Logger, c.CancelFinalizer.Clock = orDefault(c.CancelFinalizer.Logger, lg), orDefault(c.CancelFinalizer.Clock, ck)
	c.Retention.Logger, c.Retention.Clock = orDefault(c.Retention.Logger, lg), orDefault(c.Retention.Clock, ck)
	c.Election.Logger, c.Election.Clock = orDefault(c.Election.Logger, lg), orDefault(c.Election.Clock, ck)
	c.Cron.Logger, c.Cron.Clock = orDefault(c.Cron.Logger, lg), orDefault(c.Cron.Clock, ck)
	c.Scheduler = c.Scheduler.WithDefaults()
	c.Reaper = c.Reaper.WithDefaults()
	c.Timeouts = c.Timeouts.WithDefaults()
	c.CancelFinalizer = c.CancelFinalizer.WithDefaults()
	c.Retention = c.Retention.WithDefaults()
	c.Election = c.Election.WithDefaults()
	return c
}

// service is the shape every maintenance service has.
type service interface {
	Start(ctx context.Context) error
	Stop()
	Wake()
}

// Maintainer runs the maintenance services. Unless SingleNode is set, it
// runs them only while its [Elector] holds the leader seat: they start when
// it is elected and stop, at once, when it steps down.
type Maintainer struct {
	cfg      Config
	elector  *Elector // nil when SingleNode
	services []service

	scheduler *Scheduler
	reaper    *Reaper
	timeouts  *Timeouts
	canceller *CancelFinalizer
	retention *Retention
	cron      *Cron // nil when the store keeps no schedules

	mu      sync.Mutex
	runCtx  context.Context // the context Start was given, for the services
	running bool            // the services are started
	started bool            // Start was called and Stop was not
}

// New returns a Maintainer over s; cfg may be nil for the defaults. A bad
// Config is reported here, naming the field.
func New(s store.Store, cfg *Config) (*Maintainer, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	m := &Maintainer{cfg: c}
	var err error
	if m.scheduler, err = NewScheduler(s, &c.Scheduler); err != nil {
		return nil, err
	}
	if m.reaper, err = NewReaper(s, &c.Reaper); err != nil {
		return nil, err
	}
	if m.timeouts, err = NewTimeouts(s, &c.Timeouts); err != nil {
		return nil, err
	}
	if m.canceller, err = NewCancelFinalizer(s, &c.CancelFinalizer); err != nil {
		return nil, err
	}
	if m.retention, err = NewRetention(s, &c.Retention); err != nil {
		return nil, err
	}
	m.services = []service{m.scheduler, m.reaper, m.timeouts, m.canceller, m.retention}
	if _, err := store.Schedules(s); err == nil {
		if m.cron, err = NewCron(s, &c.Cron); err != nil {
			return nil, err
		}
		m.services = append(m.services, m.cron)
	}
	if !c.SingleNode {
		if m.elector, err = NewElector(s, &c.Election); err != nil {
			return nil, err
		}
		m.elector.changed = m.leaderChanged
	}
	return m, nil
}

// Start begins: on a single node the services start at once; otherwise the
// Maintainer competes for the seat and runs them while it leads. Everything
// stops when ctx ends, as with Stop. Starting a started Maintainer does
// nothing; after Stop, Start begins again.
func (m *Maintainer) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("maintenance: not started: %w", err)
	}
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return nil
	}
	m.started, m.runCtx = true, ctx
	m.mu.Unlock()
	if m.elector == nil {
		m.startServices()
		return nil
	}
	return m.elector.Start(ctx)
}

// Stop stops the services, then resigns the seat so another node takes
// over at once.
func (m *Maintainer) Stop() {
	if m.elector != nil {
		m.elector.Stop()
	}
	m.stopServices()
	m.mu.Lock()
	m.started = false
	m.mu.Unlock()
}

// Wake asks every running service for a pass now.
func (m *Maintainer) Wake() {
	for _, s := range m.services {
		s.Wake()
	}
}

// IsLeader reports whether this Maintainer runs the services: it holds the
// seat and still trusts it (always, while started, on a single node).
func (m *Maintainer) IsLeader() bool {
	if m.elector == nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.running && m.runCtx.Err() == nil
	}
	return m.elector.IsLeader()
}

// Term returns the term of the seat this Maintainer holds or last held; 0 if
// it never did, or on a single node.
func (m *Maintainer) Term() int64 {
	if m.elector == nil {
		return 0
	}
	return m.elector.Term()
}

// ID returns the Maintainer's candidate id; empty on a single node.
func (m *Maintainer) ID() string {
	if m.elector == nil {
		return ""
	}
	return m.elector.ID()
}

func (m *Maintainer) leaderChanged(c LeaderChange) {
	if c.Leader {
		m.startServices()
	} else {
		m.stopServices()
	}
}

func (m *Maintainer) startServices() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return
	}
	for _, s := range m.services {
		if err := s.Start(m.runCtx); err != nil {
			m.cfg.Logger.Warn("maintenance service did not start", "error", err)
		}
	}
	m.running = true
}

// stopServices stops every service at once and returns when all have.
func (m *Maintainer) stopServices() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running {
		return
	}
	var wg sync.WaitGroup
	for _, s := range m.services {
		wg.Go(s.Stop)
	}
	wg.Wait()
	m.running = false
}
