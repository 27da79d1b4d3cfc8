package maintenance

import (
	"context"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/store"
)

// Cron fires the ticks of the store's schedules: a [cron.Service]'s passes
// on the loop every maintenance service shares.
type Cron struct {
	l *loop
}

// NewCron returns the cron service over s; cfg may be nil for the defaults.
// It fails when s keeps no schedules.
func NewCron(s store.Store, cfg *cron.Config) (*Cron, error) {
	sv, err := cron.NewService(s, cfg)
	if err != nil {
		return nil, err
	}
	c := sv.Config()
	return &Cron{l: newLoop("cron", c.Interval, c.Clock, c.Logger, sv.Pass)}, nil
}

// Start makes a pass now and then one every Interval until Stop or ctx ends.
func (c *Cron) Start(ctx context.Context) error { return c.l.Start(ctx) }

// Stop ends the passes and waits for the current one.
func (c *Cron) Stop() { c.l.Stop() }

// Wake asks for a pass now.
func (c *Cron) Wake() { c.l.Wake() }
