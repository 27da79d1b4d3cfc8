package lifecycle

import (
	"errors"
	"fmt"
)

// Sentinel errors for the conditions a caller branches on. Errors returned by
// stint wrap one of them; test with errors.Is.
var (
	// ErrValidation: the request itself is malformed (a 4xx); nothing changed.
	ErrValidation = errors.New("invalid request")
	// ErrNotFound: no job has the given id.
	ErrNotFound = errors.New("not found")
	// ErrInvalidTransition: the transition table has no row for this request.
	ErrInvalidTransition = errors.New("invalid transition")
	// ErrStaleLease: the lease presented is expired, revoked or superseded.
	ErrStaleLease = errors.New("stale lease")
	// ErrRevisionConflict: the job changed since the revision the caller read.
	ErrRevisionConflict = errors.New("revision conflict")
	// ErrRequestConflict: a request id was reused for a different operation.
	ErrRequestConflict = errors.New("request id conflict")
)

// Error is the typed error of a rejected request: which job and operation, the
// sentinel condition (Kind) and a message that says what to do.
type Error struct {
	Kind  error  // one of the sentinel errors above
	JobID string // empty when no job is involved
	Op    Op
	State State // the job's state when the request was rejected
	Msg   string
}

func (e *Error) Error() string {
	var b []byte
	b = append(b, e.Kind.Error()...)
	if e.Op != "" {
		b = fmt.Appendf(b, ": %s", e.Op)
	}
	if e.JobID != "" {
		sep := " "
		if e.Op == "" {
			sep = ": "
		}
		b = fmt.Appendf(b, "%sjob %s", sep, e.JobID)
	}
	if e.State != "" && e.JobID != "" {
		b = fmt.Appendf(b, " (state %s)", e.State)
	}
	if e.Msg != "" {
		b = fmt.Appendf(b, ": %s", e.Msg)
	}
	return string(b)
}

// Unwrap returns the sentinel condition, so errors.Is(err, ErrStaleLease) works.
func (e *Error) Unwrap() error { return e.Kind }

// Validationf returns an [ErrValidation] error with a formatted message.
func Validationf(format string, args ...any) error {
	return &Error{Kind: ErrValidation, Msg: fmt.Sprintf(format, args...)}
}

func reject(kind error, j *Job, op Op, format string, args ...any) error {
	e := &Error{Kind: kind, Op: op, Msg: fmt.Sprintf(format, args...)}
	if j != nil {
		e.JobID, e.State = j.ID, j.State
	}
	return e
}

// ErrorClass classifies a handler's error for retry decisions.
type ErrorClass string

// The error classes of a failed attempt.
const (
	// ClassTransient errors are retried while attempts remain.
	ClassTransient ErrorClass = "transient"
	// ClassPermanent errors are never retried.
	ClassPermanent ErrorClass = "permanent"
	// ClassTimeout marks an attempt that ran past its timeout; retried while
	// attempts remain, timed_out when none are left.
	ClassTimeout ErrorClass = "timeout"
)

// RetryRules decide retry eligibility from an error code (seed-ci: compile
// errors never retry, network errors do). Codes not listed keep the class the
// reporter gave.
type RetryRules map[string]ErrorClass

// DefaultRetryRules are the rules used when none are configured.
var DefaultRetryRules = RetryRules{
	"compile_error":    ClassPermanent,
	"validation":       ClassPermanent,
	"lint":             ClassPermanent,
	"test_failure":     ClassPermanent,
	"network":          ClassTransient,
	"infrastructure":   ClassTransient,
	"runner_startup":   ClassTransient,
	"fetch":            ClassTransient,
	"timeout":          ClassTimeout,
	"dependency_error": ClassTransient,
}

// Classify returns the class for code, or fallback when no rule names it.
func (r RetryRules) Classify(code string, fallback ErrorClass) ErrorClass {
	if c, ok := r[code]; ok {
		return c
	}
	return fallback
}
