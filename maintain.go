package stint

import (
	"context"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// DefaultMaintenanceCheck is how often a pool looks for work that stays
// due because no maintenance services run anywhere, and warns about it.
const DefaultMaintenanceCheck = time.Minute

// MaintainedElsewhere is implemented by stores whose maintenance is done
// for them by another process, such as a network client of stint server:
// a pool on such a store does not run the maintenance services (it could
// not elect a leader through it anyway).
type MaintainedElsewhere interface {
	// MaintainedElsewhere reports whether another process runs the
	// maintenance services for this store.
	MaintainedElsewhere() bool
}

// newMaintainer builds the maintenance services the pool runs, unless
// Config.NoMaintenance or the store says another process runs them.
func newMaintainer(s store.Store, cfg Config) (*maintenance.Maintainer, error) {
	if m, ok := store.As[MaintainedElsewhere](s); cfg.NoMaintenance || (ok && m.MaintainedElsewhere()) {
		return nil, nil
	}
	mc := maintenance.Config{}
	if cfg.Maintenance != nil {
		mc = *cfg.Maintenance
	}
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	if mc.Clock == nil {
		mc.Clock = cfg.Clock
	}
	m, err := maintenance.New(s, &mc)
	if err != nil {
		return nil, fmt.Errorf("stint: Config.Maintenance: %w", err)
	}
	return m, nil
}

// watchMaintenance warns, at most once per Config.MaintenanceCheck, while
// work stays due that only the maintenance services move on: retrying or
// scheduled jobs past their run_at, and stalled jobs, by more than the check
// interval (the scheduler and the reaper run every second when any process
// runs them). Without it a pool started without the services leaves retries
// waiting forever in silence.
func (p *Pool) watchMaintenance() {
	defer p.bgDone.Done()
	every := p.cfg.MaintenanceCheck
	for {
		select {
		case <-p.background:
			return
		case <-p.clock.After(every):
		}
		n, err := p.overdue(every)
		if err != nil {
			p.log.Warn("stint: could not check for overdue work", "error", err)
			continue
		}
		if n == 0 {
			continue
		}
		hint := "this pool runs them (Config.NoMaintenance is false), so they may be failing: see the maintenance log lines"
		if p.cfg.NoMaintenance {
			hint = "Config.NoMaintenance is set: run them in some process on this database (stint server, stint dev, or maintenance.New(s, cfg).Start(ctx)), or unset NoMaintenance"
		}
		p.log.Error(fmt.Sprintf("stint: NO MAINTENANCE LEADER: %d jobs are overdue (retrying or scheduled past their run_at, or stalled, for over %s) and no maintenance services move them; %s", n, every, hint),
			"overdue", n)
	}
}

// overdue counts the jobs (up to a page) that the maintenance services
// should have moved on more than grace ago.
func (p *Pool) overdue(grace time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(p.base, grace)
	defer cancel()
	jobs, err := p.store.JobList(ctx, &store.JobListParams{
		States: []lifecycle.State{lifecycle.Retrying, lifecycle.Scheduled, lifecycle.Stalled}, Limit: DefaultFetchLimit * 10,
	})
	if err != nil {
		return 0, err
	}
	before := p.clock.Now().Add(-grace)
	n := 0
	for _, j := range jobs {
		due := j.RunAt
		if j.State == lifecycle.Stalled {
			due = j.UpdatedAt // due for requeue at once
		}
		if due.Before(before) {
			n++
		}
	}
	return n, nil
}
