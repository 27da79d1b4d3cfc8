package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Store wraps s so that what passes through it is counted: claims, lease
// renewals, completions, failures, retries, dead letters, lease expiries and
// stale-lease rejections, with queue wait and run time per kind. Give the
// wrapped store to the pool, the server and the maintenance services alike;
// the optional capabilities of s (tokens, queue controls, schedules) stay
// reachable through Unwrap (see store.As).
func (m *Metrics) Store(s store.Store) store.Store {
	return &instrumented{Store: s, m: m}
}

type instrumented struct {
	store.Store
	m *Metrics
}

// Unwrap returns the store underneath.
func (s *instrumented) Unwrap() store.Store { return s.Store }

// refused counts an error by what it means: a stale lease is a worker
// reporting on a job it no longer holds; a refused transition or bad input
// is the caller's business; anything else is the store failing.
func (m *Metrics) refused(op string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, store.ErrStaleLease):
		m.staleRejections.WithLabelValues(op).Inc()
	case errors.Is(err, store.ErrInvalidTransition), errors.Is(err, store.ErrNotFound),
		errors.Is(err, store.ErrValidation), errors.Is(err, context.Canceled):
	default:
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// attemptEnded counts an attempt the store accepted a report of.
func (m *Metrics) attemptEnded(j store.Job, executionMS int64) {
	m.completions.WithLabelValues(m.kind(j.Kind), string(j.State)).Inc()
	m.mu.Lock()
	m.ended[j.Queue]++
	m.mu.Unlock()
	switch j.State {
	case lifecycle.Retrying, lifecycle.Scheduled, lifecycle.Queued:
		m.failures.WithLabelValues(m.kind(j.Kind)).Inc()
		m.retries.WithLabelValues(m.kind(j.Kind)).Inc()
	case lifecycle.Failed:
		m.failures.WithLabelValues(m.kind(j.Kind)).Inc()
	case lifecycle.DeadLettered:
		m.failures.WithLabelValues(m.kind(j.Kind)).Inc()
		m.deadLettered.WithLabelValues(m.kind(j.Kind)).Inc()
	}
	ran := time.Duration(executionMS) * time.Millisecond
	if executionMS == 0 && j.AttemptStartedAt != nil {
		ran = j.UpdatedAt.Sub(*j.AttemptStartedAt)
	}
	if ran > 0 {
		m.runTime.WithLabelValues(m.kind(j.Kind)).Observe(ran.Seconds())
	}
}

func (s *instrumented) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	jobs, err := s.Store.JobClaim(ctx, p)
	if err != nil {
		if errors.Is(err, store.ErrRevisionConflict) || errors.Is(err, store.ErrRequestConflict) {
			for _, q := range p.Queues {
				s.m.claimConflicts.WithLabelValues(s.m.queue(q)).Inc()
			}
		} else {
			s.m.refused("claim", err)
		}
		return jobs, err
	}
	for _, j := range jobs {
		s.m.claims.WithLabelValues(s.m.queue(j.Queue), s.m.kind(j.Kind)).Inc()
		if wait := j.UpdatedAt.Sub(j.RunAt); wait >= 0 {
			s.m.queueWait.WithLabelValues(s.m.kind(j.Kind)).Observe(wait.Seconds())
		}
	}
	return jobs, nil
}

func (s *instrumented) JobHeartbeat(ctx context.Context, p *store.JobHeartbeatParams) (store.Job, error) {
	j, err := s.Store.JobHeartbeat(ctx, p)
	if err != nil {
		s.m.refused("heartbeat", err)
		return j, err
	}
	s.m.leaseRenewals.WithLabelValues(s.m.kind(j.Kind)).Inc()
	return j, nil
}

func (s *instrumented) JobComplete(ctx context.Context, p []store.JobCompleteParams) ([]store.Result, error) {
	res, err := s.Store.JobComplete(ctx, p)
	if err != nil {
		s.m.refused("complete", err)
		return res, err
	}
	for i, r := range res {
		if r.Err != nil {
			s.m.refused("complete", r.Err)
			continue
		}
		var ms int64
		if i < len(p) {
			ms = p[i].ExecutionMS
		}
		s.m.attemptEnded(r.Job, ms)
	}
	return res, nil
}

func (s *instrumented) JobFail(ctx context.Context, p *store.JobFailParams) (store.Job, error) {
	j, err := s.Store.JobFail(ctx, p)
	if err != nil {
		s.m.refused("fail", err)
		return j, err
	}
	s.m.attemptEnded(j, p.ExecutionMS)
	return j, nil
}

func (s *instrumented) JobHalt(ctx context.Context, p *store.JobHaltParams) (store.Job, error) {
	j, err := s.Store.JobHalt(ctx, p)
	if err != nil {
		s.m.refused("halt", err)
		return j, err
	}
	s.m.attemptEnded(j, p.ExecutionMS)
	return j, nil
}

func (s *instrumented) JobDeadLetter(ctx context.Context, p *store.JobDeadLetterParams) (store.Job, error) {
	j, err := s.Store.JobDeadLetter(ctx, p)
	if err != nil {
		s.m.refused("dead_letter", err)
		return j, err
	}
	s.m.attemptEnded(j, 0)
	return j, nil
}

func (s *instrumented) JobAckCancel(ctx context.Context, p *store.OwnerParams) (store.Job, error) {
	j, err := s.Store.JobAckCancel(ctx, p)
	if err != nil {
		s.m.refused("ack_cancel", err)
		return j, err
	}
	s.m.attemptEnded(j, 0)
	return j, nil
}

func (s *instrumented) JobRelease(ctx context.Context, p *store.JobReleaseParams) (store.Job, error) {
	j, err := s.Store.JobRelease(ctx, p)
	s.m.refused("release", err)
	return j, err
}

func (s *instrumented) JobCheckpoint(ctx context.Context, p *store.JobCheckpointParams) (store.Job, error) {
	j, err := s.Store.JobCheckpoint(ctx, p)
	s.m.refused("checkpoint", err)
	return j, err
}

func (s *instrumented) JobStallExpired(ctx context.Context, p *store.MaintainParams) (int, error) {
	n, err := s.Store.JobStallExpired(ctx, p)
	if err != nil {
		s.m.refused("stall_expired", err)
		return n, err
	}
	s.m.leaseExpiries.Add(float64(n))
	return n, nil
}
