package stint

import (
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// The domain types of the public API, defined by the lifecycle and store
// packages and named here so a program using stint needs only this package.
type (
	// Spec is what a producer asks for at enqueue: kind, queue, payload,
	// priority, scheduling, limits, budget. Zero fields take the defaults
	// documented on lifecycle.Spec.
	Spec = lifecycle.Spec
	// JobRecord is the stored record of a job: its spec, state, attempt,
	// lease, checkpoint, result or error, and timings.
	JobRecord = lifecycle.Job
	// State is a job's lifecycle state.
	State = lifecycle.State
	// Budget bounds a job's work (runtime, steps, cost); a job past it is halted.
	Budget = lifecycle.Budget
	// Event is one entry of a job's audit log.
	Event = lifecycle.Event
	// EnqueueResult is one enqueued job, or the live job its dedupe key matched.
	EnqueueResult = store.EnqueueResult
	// ListParams filter and page a job listing.
	ListParams = store.JobListParams
)

// The job states.
const (
	Blocked         = lifecycle.Blocked
	Scheduled       = lifecycle.Scheduled
	Queued          = lifecycle.Queued
	Claimed         = lifecycle.Claimed
	Running         = lifecycle.Running
	CancelRequested = lifecycle.CancelRequested
	Stalled         = lifecycle.Stalled
	Retrying        = lifecycle.Retrying
	Succeeded       = lifecycle.Succeeded
	Failed          = lifecycle.Failed
	Cancelled       = lifecycle.Cancelled
	TimedOut        = lifecycle.TimedOut
	Halted          = lifecycle.Halted
	DeadLettered    = lifecycle.DeadLettered
	Denied          = lifecycle.Denied
)
