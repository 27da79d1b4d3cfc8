package store

import (
	"context"
	"encoding/json"
	"fmt"
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
type SpecDefaults struct {
	MaxAttempts int           `json:"max_attempts,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	Priority    int           `json:"priority,omitempty"`
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
	}
	return nil
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
