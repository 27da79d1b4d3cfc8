package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// DefaultBudgetInterval is how often Timeouts scans running jobs for a
// passed runtime budget.
const DefaultBudgetInterval = 5 * time.Second

// TimeoutsConfig configures [Timeouts].
type TimeoutsConfig struct {
	// Interval is the time between passes: how long after its timeout or
	// deadline a job may wait to be timed out. Defaults to DefaultInterval (1s).
	Interval time.Duration
	// Limit is the most jobs one store call changes. Defaults to
	// DefaultLimit (1000).
	Limit int
	// BudgetInterval is how often running jobs are scanned for a runtime
	// budget they passed. The scan reads every running job (no index can
	// answer it), so it runs less often than the timeouts; the worker pool
	// also enforces budgets in-process, and this scan is the backstop for
	// workers that do not. A negative value turns the scan off. Defaults to
	// DefaultBudgetInterval (5s).
	BudgetInterval time.Duration
	// Logger receives failed passes and what each pass changed. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock times the passes and judges runtime budgets. Defaults to the
	// system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c TimeoutsConfig) WithDefaults() TimeoutsConfig {
	c.Interval = orDefault(c.Interval, DefaultInterval)
	c.Limit = orDefault(c.Limit, DefaultLimit)
	c.BudgetInterval = orDefault(c.BudgetInterval, DefaultBudgetInterval)
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c TimeoutsConfig) validate() error { return validateCommon("timeouts", c.Interval, c.Limit) }

// Timeouts enforces time limits. A job past its overall deadline is
// timed_out from any non-terminal state; a running attempt past its timeout
// fails with code timeout (retrying if attempts remain, else timed_out); a
// running job past its runtime budget is halted (reason budget_exceeded),
// keeping its last checkpoint. Each revokes the lease, so the old owner's
// late writes are rejected.
type Timeouts struct {
	l     *loop
	store store.Store
	cfg   TimeoutsConfig
	now   nowFunc

	lastScan time.Time // of running jobs for budgets; touched only by the loop
}

// NewTimeouts returns a timeouts service over s; cfg may be nil for the defaults.
func NewTimeouts(s store.Store, cfg *TimeoutsConfig) (*Timeouts, error) {
	c := TimeoutsConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	t := &Timeouts{store: s, cfg: c, now: storeNow}
	t.l = newLoop("timeouts", c.Interval, c.Clock, c.Logger, t.pass)
	return t, nil
}

func (t *Timeouts) pass(ctx context.Context) (int, error) {
	n, err := drain(ctx, t.cfg.Limit, func(ctx context.Context) (int, error) {
		return t.store.JobTimeOutDue(ctx, &store.MaintainParams{Limit: t.cfg.Limit, ActorID: "timeouts", Now: t.now()})
	})
	if n > 0 {
		t.l.logger.Info("timed out jobs past their timeout or deadline", "jobs", n)
	}
	if err != nil {
		return n, err
	}
	// Runs past their timeout, with their live jobs (one transaction each pass).
	runs, err := t.store.RunTimeOutDue(ctx, &store.MaintainParams{Limit: t.cfg.Limit, ActorID: "timeouts", Now: t.now()})
	if runs > 0 {
		t.l.logger.Info("timed out runs past their timeout", "runs", runs)
	}
	if n += runs; err != nil {
		return n, err
	}
	now := t.cfg.Clock.Now()
	if t.cfg.BudgetInterval < 0 || (!t.lastScan.IsZero() && now.Sub(t.lastScan) < t.cfg.BudgetInterval) {
		return n, nil
	}
	t.lastScan = now
	halted, err := t.haltOverBudget(ctx, now)
	if halted > 0 {
		t.l.logger.Info("halted running jobs past their runtime budget", "jobs", halted)
	}
	return n + halted, err
}

// haltOverBudget pages through the running jobs and halts each one past its
// runtime budget at now. The halt is a compare-and-swap on the revision read,
// so a job that moved on meanwhile (a heartbeat, a completion) is left for
// the next scan.
func (t *Timeouts) haltOverBudget(ctx context.Context, now time.Time) (int, error) {
	halted, after := 0, ""
	for {
		jobs, err := t.store.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.Running}, AfterID: after, Limit: t.cfg.Limit})
		if err != nil {
			return halted, err
		}
		for _, j := range jobs {
			why, over := lifecycle.OverBudget(j, now)
			if !over {
				continue
			}
			rev := j.Rev
			_, err := t.store.JobApply(ctx, &store.JobApplyParams{
				JobID: j.ID, ExpectedRev: &rev, Now: t.now(),
				Command: lifecycle.Command{Op: lifecycle.OpHalt, Actor: lifecycle.ActorSystem, ActorID: "timeouts",
					ReasonCode: lifecycle.ReasonBudget, Reason: why},
			})
			switch {
			case err == nil:
				halted++
			case store.IsRejection(err) || errors.Is(err, store.ErrRevisionConflict):
				// Moved on since the listing; the next scan sees it again if still due.
			default:
				return halted, fmt.Errorf("halt job %s over budget: %w", j.ID, err)
			}
		}
		if len(jobs) < t.cfg.Limit {
			return halted, nil
		}
		after = jobs[len(jobs)-1].ID
	}
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (t *Timeouts) Start(ctx context.Context) error { return t.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (t *Timeouts) Stop() { t.l.Stop() }

// Wake asks for a pass now.
func (t *Timeouts) Wake() { t.l.Wake() }
