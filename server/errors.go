package server

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// ErrorKindHeader is the error metadata key that names the store condition
// behind an error (stale_lease, not_found, ...), so a Go client can give its
// caller the same sentinel error a local store would.
const ErrorKindHeader = "Stint-Error"

// kinds pairs each sentinel error with its Connect code and wire name.
var kinds = []struct {
	err  error
	code connect.Code
	name string
}{
	// The step conditions come before the ones they wrap, so a client
	// learns which (docs/steps.md).
	{store.ErrStepTooLarge, connect.CodeInvalidArgument, "step_too_large"},
	{store.ErrStepConflict, connect.CodeAborted, "step_conflict"},
	{store.ErrWaitOver, connect.CodeFailedPrecondition, "wait_over"},
	{store.ErrSignalTaken, connect.CodeFailedPrecondition, "signal_taken"},
	{store.ErrValidation, connect.CodeInvalidArgument, "validation"},
	{store.ErrNotFound, connect.CodeNotFound, "not_found"},
	{store.ErrStaleLease, connect.CodeFailedPrecondition, "stale_lease"},
	{store.ErrInvalidTransition, connect.CodeFailedPrecondition, "invalid_transition"},
	{store.ErrRevisionConflict, connect.CodeAborted, "revision_conflict"},
	{store.ErrRequestConflict, connect.CodeAlreadyExists, "request_conflict"},
	{store.ErrUnsupported, connect.CodeUnimplemented, "unsupported"},
}

// KindError returns the sentinel error named name, or nil.
func KindError(name string) error {
	for _, k := range kinds {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// toConnect turns a store error into a Connect error with the right code,
// the store's message, and the condition's name in the metadata.
func toConnect(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			e := connect.NewError(k.code, err)
			e.Meta().Set(ErrorKindHeader, k.name)
			return e
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}

// invalid returns an InvalidArgument error; nothing was written.
func invalid(format string, args ...any) error {
	e := connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
	e.Meta().Set(ErrorKindHeader, "validation")
	return e
}

// notFound is the answer for a missing job and for another tenant's job alike.
func notFound(id string) error {
	return toConnect(&lifecycle.Error{Kind: store.ErrNotFound, JobID: id, Msg: "no such job; check the id"})
}

// messageOf is the message of a Connect error without its code.
func messageOf(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}
