package stint

import (
	"fmt"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// JobDefaults are the defaults of the jobs of one kind or of one queue, set
// in Config.KindDefaults and Config.QueueDefaults (the pool's: lease TTL,
// timeout, backoff and retry rules) and in ClientConfig.KindDefaults and
// ClientConfig.QueueDefaults (the client's: timeout and max attempts, written
// into the job at enqueue). Zero fields set nothing.
//
// Precedence, for each field on its own: what the job's spec says, then
// its kind's defaults, then its queue's, then the pool's or client's own
// (Config.LeaseTTL, Config.Backoff) or stint's. The client's fill the spec
// before the store sees it: the job defaults kept in the database
// (store.SpecDefaults, set with Client.LimitQueue), which every enqueue
// path applies, come after them.
type JobDefaults struct {
	// LeaseTTL is how long a claim of these jobs lasts without a heartbeat
	// (pool only); they heartbeat every LeaseTTL/3.
	LeaseTTL time.Duration
	// Timeout bounds one attempt, start to finish. The client writes it
	// into jobs enqueued without one; the pool enforces it on jobs that
	// still have none.
	Timeout time.Duration
	// MaxAttempts is written by the client into jobs enqueued without one.
	MaxAttempts int
	// Backoff schedules the retries of failed attempts (pool only).
	Backoff lifecycle.Backoff
	// Permanent lists error codes that are never retried (pool only): an
	// attempt that fails with one of them fails the job, as a
	// stint.Permanent error does (seed-ci: a compile error never retries).
	Permanent []string
}

func (d JobDefaults) validate(what string) error {
	switch {
	case d.LeaseTTL < 0:
		return fmt.Errorf("stint: %s.LeaseTTL is %s: use a positive duration", what, d.LeaseTTL)
	case d.Timeout < 0:
		return fmt.Errorf("stint: %s.Timeout is %s: use a positive duration", what, d.Timeout)
	case d.MaxAttempts < 0 || d.MaxAttempts > lifecycle.MaxMaxAttempts:
		return fmt.Errorf("stint: %s.MaxAttempts is %d: use 1 to %d", what, d.MaxAttempts, lifecycle.MaxMaxAttempts)
	}
	return nil
}

func validateDefaults(field string, m map[string]JobDefaults) error {
	for name, d := range m {
		if err := d.validate(fmt.Sprintf("%s[%q]", field, name)); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns the defaults that apply to one (kind, queue), each field
// taken from the first of kind, queue, base that sets it.
func resolve(kind, queue JobDefaults, base JobDefaults) JobDefaults {
	out := base
	for _, d := range []JobDefaults{queue, kind} { // later wins
		if d.LeaseTTL > 0 {
			out.LeaseTTL = d.LeaseTTL
		}
		if d.Timeout > 0 {
			out.Timeout = d.Timeout
		}
		if d.MaxAttempts > 0 {
			out.MaxAttempts = d.MaxAttempts
		}
		if d.Backoff != (lifecycle.Backoff{}) {
			out.Backoff = d.Backoff.OrDefault()
		}
		if d.Permanent != nil {
			out.Permanent = d.Permanent
		}
	}
	return out
}

// defaultsFor returns the pool's defaults for jobs of kind in queue.
func (c Config) defaultsFor(kind, queue string) JobDefaults {
	return resolve(c.KindDefaults[kind], c.QueueDefaults[queue], JobDefaults{LeaseTTL: c.LeaseTTL, Backoff: c.Backoff})
}

// permanent reports whether code is one the defaults never retry.
func (d JobDefaults) permanent(code string) bool { return slices.Contains(d.Permanent, code) }

// applyDefaults fills the spec's timeout and max attempts from the
// client's kind and queue defaults where the spec sets none.
func (c ClientConfig) applyDefaults(spec Spec) Spec {
	queue := spec.Queue
	if queue == "" {
		queue = lifecycle.DefaultQueue
	}
	d := resolve(c.KindDefaults[spec.Kind], c.QueueDefaults[queue], JobDefaults{})
	if spec.Timeout == 0 {
		spec.Timeout = d.Timeout
	}
	if spec.MaxAttempts == 0 {
		spec.MaxAttempts = d.MaxAttempts
	}
	return spec
}
