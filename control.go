package stint

import (
	"errors"
	"fmt"
	"time"
)

// A handler decides its job's outcome by what it returns:
//
//	nil                     the job succeeds (with the result set by Job.SetResult)
//	Permanent(err)          the job fails now, without retries
//	RetryAfter(d, err)      the attempt fails; the next one is due in d (if attempts remain)
//	Halt(reason)            the job stops cleanly: halted, not failed; its checkpoint is kept
//	DeadLetter(code, err)   the job goes to the dead-letter queue with a reason code
//	any other error         the attempt fails and is retried with backoff while attempts remain
//
// Control errors may be wrapped (fmt.Errorf("...: %w", stint.Permanent(err)));
// the outermost one decides. [WithCode] attaches an error code that retry
// rules classify (for example "compile_error" never retries).

type controlKind int

const (
	kindPermanent controlKind = iota + 1
	kindRetryAfter
	kindHalt
	kindDeadLetter
)

// controlError carries a handler's decision about its job's outcome.
type controlError struct {
	kind   controlKind
	err    error
	delay  time.Duration // RetryAfter
	code   string        // DeadLetter reason code
	reason string        // Halt
}

func (e *controlError) Error() string {
	switch e.kind {
	case kindPermanent:
		return "permanent: " + errText(e.err)
	case kindRetryAfter:
		return fmt.Sprintf("retry after %s: %s", e.delay, errText(e.err))
	case kindHalt:
		return "halt: " + e.reason
	default:
		return fmt.Sprintf("dead letter (%s): %s", e.code, errText(e.err))
	}
}

func (e *controlError) Unwrap() error { return e.err }

func errText(err error) string {
	if err == nil {
		return "no error given"
	}
	return err.Error()
}

// Permanent marks err as permanent: the job fails at once, without retries.
func Permanent(err error) error { return &controlError{kind: kindPermanent, err: err} }

// RetryAfter fails the attempt and schedules the next one d from now instead
// of after the backoff. With no attempts left the job is exhausted as with
// any other failure.
func RetryAfter(d time.Duration, err error) error {
	return &controlError{kind: kindRetryAfter, err: err, delay: d}
}

// Halt stops the job cleanly by policy: it becomes halted (not failed) with
// reason, and keeps its last checkpoint.
func Halt(reason string) error { return &controlError{kind: kindHalt, reason: reason} }

// DeadLetter moves the job to the dead-letter queue with one of the
// Reason* codes (for example [ReasonParseError]) and err as its last error.
// An unknown code fails the job permanently instead, saying so.
func DeadLetter(code string, err error) error {
	return &controlError{kind: kindDeadLetter, err: err, code: code}
}

// asControl returns the outermost control error in err's chain, if any.
func asControl(err error) (*controlError, bool) {
	var c *controlError
	ok := errors.As(err, &c)
	return c, ok
}

// codedError attaches a machine-readable code to an error.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string     { return e.code + ": " + errText(e.err) }
func (e *codedError) Unwrap() error     { return e.err }
func (e *codedError) ErrorCode() string { return e.code }

// WithCode attaches code to err; the failed attempt records it, and the
// lifecycle's retry rules decide from it whether to retry ("compile_error",
// "validation" never; "network", "timeout" do). Any error with an
// ErrorCode() string method works the same way.
func WithCode(code string, err error) error { return &codedError{code: code, err: err} }

// errorCode returns the code attached to err, or fallback.
func errorCode(err error, fallback string) string {
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) && c.ErrorCode() != "" {
		return c.ErrorCode()
	}
	return fallback
}
