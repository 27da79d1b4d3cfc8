package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/stint-dev/stint/lifecycle"
)

// Admission is the policy a store applies to every new job at enqueue,
// inside the enqueue's transaction. A job it refuses is still written: as
// denied, with the reason and its denied event (the audit trail), returned
// to the caller like any other job, and never run.
type Admission struct {
	// Rules are checked in order; the first one a job breaks denies it.
	Rules []AdmissionRule `json:"rules"`
	// Hook, when set, is asked about every job the rules admit. A non-empty
	// reason denies the job; an error fails the whole enqueue (nothing is
	// written). It runs inside the enqueue's transaction: keep it quick.
	Hook func(ctx context.Context, spec lifecycle.Spec) (denyReason string, err error) `json:"-"`
}

// AdmissionRule limits the jobs it matches. Tenant, Queue and Kind select
// them (empty matches any); each limit left at its zero value is off.
type AdmissionRule struct {
	Tenant string `json:"tenant,omitempty"`
	Queue  string `json:"queue,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// MaxLiveJobs is the most non-terminal jobs the job's tenant may have
	// (in Queue, when the rule names one), counting the new job.
	MaxLiveJobs int `json:"max_live_jobs,omitempty"`
	// Kinds are the kinds the matched jobs may have; empty allows any.
	Kinds []string `json:"kinds,omitempty"`
	// MaxPayloadBytes bounds the payload below lifecycle.MaxPayloadBytes.
	MaxPayloadBytes int `json:"max_payload_bytes,omitempty"`
	// MaxPriority bounds the priority; nil means no bound.
	MaxPriority *int `json:"max_priority,omitempty"`
}

// AdmissionTx is implemented by a driver's Tx that can count live jobs for
// Admission's MaxLiveJobs.
type AdmissionTx interface {
	// JobCountLive counts the non-terminal jobs of tenant (in queue, unless
	// queue is empty). Concurrent enqueues for the same tenant that count
	// are serialized by the backend until commit, so a limit holds.
	JobCountLive(ctx context.Context, tenant, queue string) (int, error)
}

// DefaultTenantName is what tokens, the API and admission rules call the
// tenant the store records as "" (jobs enqueued without one).
const DefaultTenantName = "default"

func (r AdmissionRule) matches(s *lifecycle.Spec) bool {
	q := s.Queue
	if q == "" {
		q = lifecycle.DefaultQueue
	}
	return r.matchesTenant(s.Tenant) && (r.Queue == "" || r.Queue == q) && (r.Kind == "" || r.Kind == s.Kind)
}

// matchesTenant reports whether the rule selects jobs of tenant: a rule
// naming "default" selects the store's "" tenant, as the API names it.
func (r AdmissionRule) matchesTenant(tenant string) bool {
	return r.Tenant == "" || r.Tenant == tenant || (r.Tenant == DefaultTenantName && tenant == "")
}

// admit sets spec.DenyReason when the admission policy refuses the job.
// batch holds the results of the jobs before it in the same enqueue, which
// count towards MaxLiveJobs though they are not written yet.
func (e *engine) admit(ctx context.Context, tx Tx, spec *lifecycle.Spec, batch []EnqueueResult) error {
	a := e.admission
	if a == nil || spec.DenyReason != "" {
		return nil
	}
	for _, r := range a.Rules {
		if !r.matches(spec) {
			continue
		}
		reason, err := e.breaks(ctx, tx, r, spec, batch)
		if err != nil {
			return err
		}
		if reason != "" {
			spec.DenyReason = "admission: " + reason
			return nil
		}
	}
	if a.Hook != nil {
		reason, err := a.Hook(ctx, *spec)
		if err != nil {
			return fmt.Errorf("admission hook: %w", err)
		}
		if reason != "" {
			spec.DenyReason = "admission: " + reason
		}
	}
	return nil
}

// breaks returns why spec breaks r, or "" when it does not.
func (e *engine) breaks(ctx context.Context, tx Tx, r AdmissionRule, spec *lifecycle.Spec, batch []EnqueueResult) (string, error) {
	switch {
	case len(r.Kinds) > 0 && !slices.Contains(r.Kinds, spec.Kind):
		return fmt.Sprintf("kind %q is not allowed for tenant %q (allowed: %v)", spec.Kind, spec.Tenant, r.Kinds), nil
	case r.MaxPayloadBytes > 0 && len(spec.Payload) > r.MaxPayloadBytes:
		return fmt.Sprintf("payload is %d bytes, the limit is %d", len(spec.Payload), r.MaxPayloadBytes), nil
	case r.MaxPriority != nil && spec.Priority > *r.MaxPriority:
		return fmt.Sprintf("priority %d is above tenant %q's maximum %d", spec.Priority, spec.Tenant, *r.MaxPriority), nil
	case r.MaxLiveJobs > 0:
		at, ok := tx.(AdmissionTx)
		if !ok {
			return "", fmt.Errorf("admission: MaxLiveJobs: %w", ErrUnsupported)
		}
		n, err := at.JobCountLive(ctx, spec.Tenant, r.Queue)
		if err != nil {
			return "", err
		}
		for _, b := range batch {
			j := b.Job
			if !b.Existing && !j.State.Terminal() && j.Tenant == spec.Tenant && (r.Queue == "" || r.Queue == j.Queue) {
				n++
			}
		}
		if n >= r.MaxLiveJobs {
			return fmt.Sprintf("tenant %q has %d live jobs%s, the limit is %d", spec.Tenant, n, inQueue(r.Queue), r.MaxLiveJobs), nil
		}
	}
	return "", nil
}

func inQueue(q string) string {
	if q == "" {
		return ""
	}
	return fmt.Sprintf(" in queue %q", q)
}
