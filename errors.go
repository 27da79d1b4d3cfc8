package stint

import (
	"errors"

	"github.com/stint-dev/stint/lifecycle"
)

// The conditions a store or the client rejects a request with, re-exported
// from lifecycle so callers need not import it. Test with errors.Is; the
// typed [Error] behind them says which job, operation and state.
var (
	// ErrValidation: the request itself is malformed; nothing changed.
	ErrValidation = lifecycle.ErrValidation
	// ErrNotFound: no job has the given id.
	ErrNotFound = lifecycle.ErrNotFound
	// ErrInvalidTransition: the job's state does not allow the request
	// (for example replaying a job that is not dead-lettered).
	ErrInvalidTransition = lifecycle.ErrInvalidTransition
	// ErrStaleLease: the lease presented is expired, revoked or superseded;
	// the worker that held it must stop working on the job.
	ErrStaleLease = lifecycle.ErrStaleLease
	// ErrRevisionConflict: the job changed since the revision the caller read.
	ErrRevisionConflict = lifecycle.ErrRevisionConflict
)

// Error is the typed error of a rejected request: the sentinel condition
// (Kind), the job, the operation, the job's state and what to do.
type Error = lifecycle.Error

// Causes of a handler's context cancellation. The pool cancels a handler's
// context with one of them (read it with context.Cause); each says what the
// pool reports when the handler returns an error afterwards.
var (
	// ErrCancelRequested: a client asked for a soft cancel. Return promptly;
	// any error return acknowledges the cancel (the job becomes cancelled),
	// a nil return still completes the job.
	ErrCancelRequested = errors.New("stint: a cancel was requested")
	// ErrLeaseLost: the job is no longer this worker's (its lease expired
	// and another worker may hold it, or it was cancelled hard or timed out
	// by the system). Nothing the handler returns is reported: the store
	// would reject it as stale.
	ErrLeaseLost = errors.New("stint: the job's lease was lost")
	// ErrTimeout: the attempt ran past the job's per-attempt timeout. An
	// error return fails the attempt with code "timeout" (retried while
	// attempts remain, else timed_out).
	ErrTimeout = errors.New("stint: the attempt's timeout passed")
	// ErrDeadline: the job's overall deadline passed. An error return makes
	// the job timed_out.
	ErrDeadline = errors.New("stint: the job's deadline passed")
	// ErrBudgetExceeded: the job passed a limit of its budget (runtime,
	// steps or cost). The job is halted with its last checkpoint kept.
	// Checkpoint returns it too when the checkpoint itself was over budget;
	// the job is then halted already and nothing else is reported.
	ErrBudgetExceeded = errors.New("stint: the job's budget is exceeded")
	// ErrShutdown: the pool is shutting down and the grace period is over.
	// An error return releases the job so another worker picks it up at
	// once; a nil return still completes it.
	ErrShutdown = errors.New("stint: the worker pool is shutting down")
)

// The dead-letter reason codes [DeadLetter] accepts.
const (
	ReasonParseError            = lifecycle.ReasonParseError
	ReasonValidationFailed      = lifecycle.ReasonValidationFailed
	ReasonDependencyUnavailable = lifecycle.ReasonDependencyUnavailable
	ReasonTimeout               = lifecycle.ReasonTimeout
	ReasonExhaustedRetries      = lifecycle.ReasonExhaustedRetries
	ReasonLeaseExpired          = lifecycle.ReasonLeaseExpired
	ReasonPolicyViolation       = lifecycle.ReasonPolicyViolation
	ReasonInfrastructureFailure = lifecycle.ReasonInfrastructureFailure
	ReasonCompensationFailed    = lifecycle.ReasonCompensationFailed
)
