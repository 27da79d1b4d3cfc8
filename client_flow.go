package stint

import (
	"context"
	"time"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/store"
)

// Flow controls through the Client: debounced enqueues, queue pause and
// limits, and periodic jobs. Each is the store's own operation (see package
// store and package cron), available on every store this module opens.

// Debounce enqueues spec to run delay from now, replacing the tenant's
// pending job with the same debounce key (its payload; its due time pushed
// back, never past maxWait after the first enqueue when maxWait is set).
// See [store.Debouncer].
func (c *Client) Debounce(ctx context.Context, spec Spec, key string, delay, maxWait time.Duration) (store.DebounceResult, error) {
	d, err := store.Debounce(c.s)
	if err != nil {
		return store.DebounceResult{}, err
	}
	return d.JobDebounce(ctx, &store.JobDebounceParams{Spec: spec, Key: key, Delay: delay, MaxWait: maxWait, ActorID: c.cfg.ActorID})
}

// PauseQueue pauses a queue on every node: claims skip it, running jobs
// finish, enqueues still land.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.pauseQueue(ctx, queue, true)
}

// ResumeQueue resumes a paused queue.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.pauseQueue(ctx, queue, false)
}

func (c *Client) pauseQueue(ctx context.Context, queue string, paused bool) error {
	qs, err := store.Queues(c.s)
	if err != nil {
		return err
	}
	_, err = qs.QueuePause(ctx, queue, paused)
	return err
}

// LimitQueue sets a queue's cluster-wide limits (nil fields are kept).
func (c *Client) LimitQueue(ctx context.Context, queue string, l store.QueueLimits) (store.QueueSettings, error) {
	qs, err := store.Queues(c.s)
	if err != nil {
		return store.QueueSettings{}, err
	}
	return qs.QueueLimit(ctx, queue, l)
}

// Queues describes every queue: depth by state, running, settings, the
// oldest waiting job, and queued kinds no live worker serves.
func (c *Client) Queues(ctx context.Context) ([]store.QueueInfo, error) {
	qs, err := store.Queues(c.s)
	if err != nil {
		return nil, err
	}
	return qs.QueueInfo(ctx)
}

// Schedule creates or redefines periodic jobs (their last ticks are kept);
// the leader's maintenance fires their ticks. See package cron.
func (c *Client) Schedule(ctx context.Context, schedules ...store.Schedule) ([]store.Schedule, error) {
	return cron.Declare(ctx, c.s, schedules...)
}

// Schedules lists the periodic jobs.
func (c *Client) Schedules(ctx context.Context) ([]store.Schedule, error) {
	ss, err := store.Schedules(c.s)
	if err != nil {
		return nil, err
	}
	return ss.ScheduleList(ctx)
}

// Unschedule deletes a periodic job; the jobs it enqueued are kept.
func (c *Client) Unschedule(ctx context.Context, name string) error {
	ss, err := store.Schedules(c.s)
	if err != nil {
		return err
	}
	return ss.ScheduleDelete(ctx, name)
}

// PauseSchedule pauses (true) or resumes (false) a periodic job; ticks
// while paused are skipped, not fired on resume.
func (c *Client) PauseSchedule(ctx context.Context, name string, paused bool) error {
	ss, err := store.Schedules(c.s)
	if err != nil {
		return err
	}
	_, err = ss.SchedulePause(ctx, name, paused)
	return err
}

// LimitKind sets the most jobs of kind started per interval, across every
// queue and node; a limit of 0 removes it.
func (c *Client) LimitKind(ctx context.Context, kind string, limit int, interval time.Duration) (store.QueueSettings, error) {
	return c.LimitQueue(ctx, store.KindLimitName(kind), store.QueueLimits{RateLimit: &limit, RateInterval: &interval})
}
