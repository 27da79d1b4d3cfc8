package stint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// DefaultWaitPollInterval is how often [Client.Wait] reads a job by default.
const DefaultWaitPollInterval = 50 * time.Millisecond

// ClientConfig configures a [Client]. Zero fields take the defaults named
// on each.
type ClientConfig struct {
	// ActorID names this client in the events it causes (enqueue, cancel).
	// Defaults to "client".
	ActorID string
	// WaitPollInterval is how often Wait reads the job it waits for.
	// Defaults to 50ms.
	WaitPollInterval time.Duration
	// Clock times Wait's polling. Defaults to the system clock.
	Clock clock.Clock
	// KindDefaults and QueueDefaults set the timeout and max attempts of
	// jobs enqueued without them, by kind and by queue: the spec comes
	// first, then its kind's defaults, then its queue's, then stint's (see
	// JobDefaults). Defaults to none.
	KindDefaults  map[string]JobDefaults
	QueueDefaults map[string]JobDefaults
}

// WithDefaults returns c with every unset field given its default.
func (c ClientConfig) WithDefaults() ClientConfig {
	if c.ActorID == "" {
		c.ActorID = "client"
	}
	if c.WaitPollInterval == 0 {
		c.WaitPollInterval = DefaultWaitPollInterval
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

// Client enqueues, inspects, cancels and replays jobs. It is safe for
// concurrent use.
//
// To enqueue inside your own PostgreSQL transaction, so the jobs exist only
// if it commits, build a client on a store whose transactions are that
// transaction's savepoints:
//
//	c, _ := stint.NewClient(store.New(driver.WithTx(tx), store.Options{}), cfg)
//	c.Enqueue(ctx, spec) // commits or rolls back with tx
//
// where driver is the *postgres.Driver of your store (postgres.EnqueueTx
// does the same in one call). This keeps pgx out of programs that do not use
// PostgreSQL.
type Client struct {
	s   store.Store
	cfg ClientConfig
}

// NewClient returns a client of the jobs in s.
func NewClient(s store.Store, cfg ClientConfig) (*Client, error) {
	if s == nil {
		return nil, errors.New("stint: NewClient needs a store")
	}
	cfg = cfg.WithDefaults()
	if cfg.WaitPollInterval < 0 {
		return nil, fmt.Errorf("stint: ClientConfig.WaitPollInterval is %s: use a positive duration (default %s)", cfg.WaitPollInterval, DefaultWaitPollInterval)
	}
	if err := validateDefaults("ClientConfig.KindDefaults", cfg.KindDefaults); err != nil {
		return nil, err
	}
	if err := validateDefaults("ClientConfig.QueueDefaults", cfg.QueueDefaults); err != nil {
		return nil, err
	}
	return &Client{s: s, cfg: cfg}, nil
}

// Enqueue creates one job. If the spec's dedupe key matches a live job of
// the same tenant, that job is returned instead, with Existing set.
func (c *Client) Enqueue(ctx context.Context, spec Spec) (EnqueueResult, error) {
	res, err := c.EnqueueMany(ctx, []Spec{spec})
	if err != nil {
		return EnqueueResult{}, err
	}
	return res[0], nil
}

// EnqueueMany creates up to store.MaxBatch jobs in one transaction: all of
// them, or none when any spec is invalid. Results are in the order of specs.
func (c *Client) EnqueueMany(ctx context.Context, specs []Spec) ([]EnqueueResult, error) {
	if len(c.cfg.KindDefaults) > 0 || len(c.cfg.QueueDefaults) > 0 {
		with := make([]Spec, len(specs))
		for i, s := range specs {
			with[i] = c.cfg.applyDefaults(s)
		}
		specs = with
	}
	return c.s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs, ActorID: c.cfg.ActorID})
}

// Get returns the job with id, or an error wrapping [ErrNotFound].
func (c *Client) Get(ctx context.Context, id string) (JobRecord, error) {
	return c.s.JobGet(ctx, id)
}

// List returns the jobs matching p, ordered by id (which follows creation
// order); page with p.AfterID.
func (c *Client) List(ctx context.Context, p ListParams) ([]JobRecord, error) {
	return c.s.JobList(ctx, &p)
}

// Events returns the audit log of the job with id, oldest first.
func (c *Client) Events(ctx context.Context, id string) ([]Event, error) {
	return c.s.JobEvents(ctx, id)
}

// CancelMode says how [Client.Cancel] stops a job.
type CancelMode int

const (
	// CancelSoft cancels a job that is not running at once; a running one
	// becomes cancel_requested, its handler's context is cancelled at its
	// next heartbeat, and it is cancelled when the handler acknowledges (by
	// returning) or when its cancel grace passes.
	CancelSoft CancelMode = iota
	// CancelHard cancels any non-terminal job at once and revokes its lease:
	// the handler's context is cancelled at its next heartbeat and nothing
	// it reports afterwards counts.
	CancelHard
)

// Cancel cancels the job with id; reason is recorded (optional). Cancelling
// a job already cancelled (or, softly, already cancel_requested) is a no-op;
// cancelling a finished job fails with [ErrInvalidTransition].
func (c *Client) Cancel(ctx context.Context, id string, mode CancelMode, reason string) (JobRecord, error) {
	return c.s.JobCancel(ctx, &store.JobCancelParams{JobID: id, Hard: mode == CancelHard, Reason: reason, ActorID: c.cfg.ActorID})
}

// Wait returns the job with id once it is terminal (succeeded, failed,
// cancelled, timed_out, halted, dead_lettered or denied), reading it every
// ClientConfig.WaitPollInterval, or ctx's error when ctx ends first.
func (c *Client) Wait(ctx context.Context, id string) (JobRecord, error) {
	for {
		j, err := c.s.JobGet(ctx, id)
		if err != nil && ctx.Err() != nil {
			// The read was cut short by ctx: say so, not how the driver failed.
			return j, fmt.Errorf("stint: wait for job %s: %w", id, ctx.Err())
		}
		if err != nil || j.State.Terminal() {
			return j, err
		}
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("stint: wait for job %s (%s): %w", id, j.State, ctx.Err())
		case <-c.cfg.Clock.After(c.cfg.WaitPollInterval):
		}
	}
}
