package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// SpecDefaults are what a queue or a kind gives the jobs enqueued into it
// that do not say (QueueSettings.Defaults, set with QueueLimit). They live
// in the database, and every enqueue applies them inside its transaction,
// whatever the path: the Go client, the API, the CLI, the bus, cron ticks,
// debounced jobs, run jobs and children. A zero field sets nothing.
//
// Precedence, field by field: the job's own spec, then its kind's
// defaults, then its queue's, then stint's (max_attempts 3, no timeout,
// priority 0). A priority or max_attempts of 0 in a spec means "not said".
//
// The backoff is not written into the job: it schedules the retry of a
// failed or timed-out attempt, so it is applied when the attempt fails,
// inside the store (see backoffFor), whoever fails it: a Go pool, a
// remote worker, `stint worker`, or the store's own timeout. A fail that
// names its own schedule keeps it (a retry-after, or a backoff the
// worker was configured with: Config.Backoff, JobDefaults.Backoff, the
// API's FailRequest.backoff); else the kind's, then the queue's, field
// by field, then lifecycle.DefaultBackoff for what neither sets.
type SpecDefaults struct {
	MaxAttempts int           `json:"max_attempts,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	Priority    int           `json:"priority,omitempty"`
	// BackoffBase, BackoffFactor and BackoffMax are lifecycle.Backoff's
	// fields: the first retry's delay, its growth per attempt and its cap.
	BackoffBase   time.Duration `json:"backoff_base,omitempty"`
	BackoffFactor float64       `json:"backoff_factor,omitempty"`
	BackoffMax    time.Duration `json:"backoff_max,omitempty"`
}

// IsZero reports whether d sets nothing.
func (d SpecDefaults) IsZero() bool { return d == SpecDefaults{} }

func (d SpecDefaults) validate() error {
	switch {
	case d.MaxAttempts < 0 || d.MaxAttempts > lifecycle.MaxMaxAttempts:
		return lifecycle.Validationf("default max attempts %d: give 0 (none) to %d", d.MaxAttempts, lifecycle.MaxMaxAttempts)
	case d.Timeout < 0:
		return lifecycle.Validationf("default timeout %s: give 0 (none) or a positive duration", d.Timeout)
	case d.Priority < -lifecycle.MaxPriority || d.Priority > lifecycle.MaxPriority:
		return lifecycle.Validationf("default priority %d: give -%d to %d", d.Priority, lifecycle.MaxPriority, lifecycle.MaxPriority)
	case d.BackoffBase < 0:
		return lifecycle.Validationf("default backoff base %s: give 0 (none) or a positive duration, the delay before the first retry", d.BackoffBase)
	case d.BackoffMax < 0:
		return lifecycle.Validationf("default backoff max %s: give 0 (none) or a positive duration, the longest delay between retries", d.BackoffMax)
	case math.IsNaN(d.BackoffFactor) || d.BackoffFactor < 0 || d.BackoffFactor > 0 && d.BackoffFactor < 1 || d.BackoffFactor > maxBackoffFactor:
		return lifecycle.Validationf("default backoff factor %g: give 0 (none) or 1 to %d, how much each retry's delay grows", d.BackoffFactor, maxBackoffFactor)
	case d.BackoffMax > 0 && d.BackoffMax < d.BackoffBase:
		return lifecycle.Validationf("default backoff max %s is below its base %s: give a max of at least the base", d.BackoffMax, d.BackoffBase)
	case d.BackoffMax > 0 && d.BackoffBase == 0 && d.BackoffMax < lifecycle.DefaultBackoff.Base:
		return lifecycle.Validationf("default backoff max %s is below the base it would take, stint's %s: give a base too, or a max of at least %s",
			d.BackoffMax, lifecycle.DefaultBackoff.Base, lifecycle.DefaultBackoff.Base)
	}
	return nil
}

// maxBackoffFactor bounds a default backoff's factor: beyond it the second
// retry already waits the whole max.
const maxBackoffFactor = 1000

// Backoff returns the retry schedule d sets, zero fields where it sets
// none.
func (d SpecDefaults) Backoff() lifecycle.Backoff {
	return lifecycle.Backoff{Base: d.BackoffBase, Factor: d.BackoffFactor, Max: d.BackoffMax}
}

// String encodes d for a queues row: JSON, or "" when it sets nothing.
func (d SpecDefaults) String() string {
	if d.IsZero() {
		return ""
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// ParseSpecDefaults decodes what [SpecDefaults.String] wrote.
func ParseSpecDefaults(s string) (SpecDefaults, error) {
	var d SpecDefaults
	if s == "" {
		return d, nil
	}
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return d, fmt.Errorf("queue defaults %q: %w", s, err)
	}
	return d, nil
}

// fill sets spec's unsaid fields from kind's defaults, then queue's.
func fill(spec *lifecycle.Spec, kind, queue SpecDefaults) {
	for _, d := range []SpecDefaults{kind, queue} {
		if spec.MaxAttempts == 0 {
			spec.MaxAttempts = d.MaxAttempts
		}
		if spec.Timeout == 0 {
			spec.Timeout = d.Timeout
		}
		if spec.Priority == 0 {
			spec.Priority = d.Priority
		}
	}
}

// withDefaults returns specs with the defaults of their kinds and queues
// filled in (a copy when any applies; specs itself is never changed). The
// names of the queues and kinds with defaults are cached like the limited
// ones (limits.defaults), so enqueues where none has any read nothing more.
func (e *engine) withDefaults(ctx context.Context, tx Tx, specs []lifecycle.Spec, t time.Time) ([]lifecycle.Spec, error) {
	qt, ok := tx.(QueueTx)
	if !ok {
		return specs, nil
	}
	defaults, err := e.limits.specDefaults(ctx, qt, t)
	if err != nil || len(defaults) == 0 {
		return specs, err
	}
	var out []lifecycle.Spec
	for i, spec := range specs {
		queue := spec.Queue
		if queue == "" {
			queue = lifecycle.DefaultQueue
		}
		kd, kok := defaults[KindLimitName(spec.Kind)]
		qd, qok := defaults[queue]
		if !kok && !qok {
			continue
		}
		if out == nil {
			out = append([]lifecycle.Spec(nil), specs...)
		}
		fill(&out[i], kd, qd)
	}
	if out == nil {
		return specs, nil
	}
	return out, nil
}

// backoffFor returns the retry schedule of a failing attempt of job that
// names none: its kind's default backoff, then its queue's, field by
// field; zero fields take lifecycle.DefaultBackoff's. This is the one
// place a stored backoff is applied (see SpecDefaults).
func (e *engine) backoffFor(ctx context.Context, tx Tx, job lifecycle.Job, t time.Time) (lifecycle.Backoff, error) {
	qt, ok := tx.(QueueTx)
	if !ok {
		return lifecycle.Backoff{}, nil
	}
	defaults, err := e.limits.specDefaults(ctx, qt, t)
	if err != nil || len(defaults) == 0 {
		return lifecycle.Backoff{}, err
	}
	var b lifecycle.Backoff
	for _, d := range []lifecycle.Backoff{defaults[KindLimitName(job.Kind)].Backoff(), defaults[job.Queue].Backoff()} {
		b.Base = cmp.Or(b.Base, d.Base)
		b.Factor = cmp.Or(b.Factor, d.Factor)
		b.Max = cmp.Or(b.Max, d.Max)
	}
	return b, nil
}

// retrySchedule fills cmd's backoff from the stored defaults when cmd may
// schedule a retry (a fail or a time-out) and names no schedule of its
// own.
func (e *engine) retrySchedule(ctx context.Context, tx Tx, job lifecycle.Job, cmd *lifecycle.Command, t time.Time) error {
	if cmd.Op != lifecycle.OpFail && cmd.Op != lifecycle.OpTimeOut || cmd.RetryAt != nil || cmd.Backoff != (lifecycle.Backoff{}) {
		return nil
	}
	b, err := e.backoffFor(ctx, tx, job, t)
	cmd.Backoff = b
	return err
}

// specDefaults returns the defaults of every queue and kind row that has
// some, re-read at most every limitsRefresh by the enqueue's time t (and
// at once after a change on this node).
func (l *limits) specDefaults(ctx context.Context, qt QueueTx, t time.Time) (map[string]SpecDefaults, error) {
	l.dmu.Lock()
	defer l.dmu.Unlock()
	if !l.defaultsAt.IsZero() && t.Sub(l.defaultsAt) < limitsRefresh && !t.Before(l.defaultsAt) {
		return l.defaults, nil
	}
	defaults, err := qt.QueueDefaults(ctx)
	if err != nil {
		return nil, err
	}
	l.defaults, l.defaultsAt = defaults, t
	return defaults, nil
}
