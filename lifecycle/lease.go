package lifecycle

import (
	"slices"
	"time"
)

// LeaseState is where a job's lease stands, in seed-ci's words (granted,
// active, expired, revoked, completed, cancelled; DESIGN §5). Nothing stores
// it: [LeaseStateOf] derives it from the job's lease fields, so it can never
// disagree with them.
type LeaseState string

// The lease states. A job that never held a lease has none ("").
const (
	// LeaseGranted: claimed, not started, the lease still runs.
	LeaseGranted LeaseState = "granted"
	// LeaseActive: the owner started the job (running, or a cancel was
	// requested) and the lease still runs.
	LeaseActive LeaseState = "active"
	// LeaseExpired: the lease ran out without a heartbeat; the job still
	// names the owner until the reaper stalls it, or the reaper already did.
	LeaseExpired LeaseState = "expired"
	// LeaseRevoked: a client or the system took the lease back before its
	// owner finished: a hard cancel, a timeout or deadline, a budget halt, a
	// cancel never acknowledged, a dead-letter by the system.
	LeaseRevoked LeaseState = "revoked"
	// LeaseCompleted: the owner reported the attempt's outcome (success,
	// failure, halt, dead-letter).
	LeaseCompleted LeaseState = "completed"
	// LeaseCancelled: the owner acknowledged a cancel.
	LeaseCancelled LeaseState = "cancelled"
	// LeaseReleased: the owner gave the lease back without an outcome (a
	// graceful stop, a durable sleep or wait). stint's own addition to
	// seed-ci's list: no attempt was spent.
	LeaseReleased LeaseState = "released"
)

// LeaseStateOf is the state of j's current lease at now, or of its last
// one when it holds none; "" when it was never leased. now should be the
// store's clock (lease validity is judged by it).
func LeaseStateOf(j Job, now time.Time) LeaseState {
	if j.State.Leased() {
		switch {
		case j.LeaseExpiresAt != nil && !now.Before(*j.LeaseExpiresAt):
			return LeaseExpired
		case j.State == Claimed:
			return LeaseGranted
		default:
			return LeaseActive
		}
	}
	if j.LastLeaseID == "" {
		return ""
	}
	// The attempt's own error, if it recorded one: a failure the owner
	// reported, or the system's timeout.
	var failed *JobError
	if e := firstError(j); e != nil && e.Attempt == j.Attempt {
		failed = e
	}
	switch j.LeaseEndedBy {
	case ActorClient:
		return LeaseRevoked // a hard cancel
	case ActorOwner:
		switch {
		case j.State == Cancelled:
			return LeaseCancelled
		case j.State.Terminal() || failed != nil:
			return LeaseCompleted
		default:
			return LeaseReleased // stalled by release, suspended, or requeued after either
		}
	}
	switch {
	case j.State == Cancelled, j.State == Halted, j.State == TimedOut:
		return LeaseRevoked // force_cancel, a budget halt, a timeout with no attempts left
	case failed != nil && (failed.Code == ReasonTimeout || failed.Code == ReasonDeadline):
		return LeaseRevoked // a timeout with attempts left
	case j.State == DeadLettered && !slices.Contains([]string{ReasonLeaseExpired, ReasonExhaustedRetries}, j.ReasonCode):
		return LeaseRevoked
	}
	return LeaseExpired // the reaper stalled it (and maybe requeued or dead-lettered it since)
}

// firstError is the job's final error, else its last one.
func firstError(j Job) *JobError {
	if j.Error != nil {
		return j.Error
	}
	return j.LastError
}
