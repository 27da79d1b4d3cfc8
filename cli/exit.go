package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store"
)

// Exit codes of the stint binary.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: the system failed (database unreachable, I/O error), or
	// verify found problems.
	ExitFailure = 1
	// ExitUsage: the input was wrong (a bad flag or value, a missing or
	// outdated database, a request the store refused); nothing was changed.
	ExitUsage = 2
	// ExitNotFound: the job (or other thing) named does not exist.
	ExitNotFound = 4
)

// ExitError ends a command with an exit code. Main prints Err on one line
// of stderr; a nil Err prints nothing (the command already reported).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ExitError) Unwrap() error { return e.Err }

// usageErrorf returns an ExitUsage error with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// run adapts a command body to cobra: every error it returns becomes an
// *ExitError with the code its kind calls for. Errors that reach Main
// without one came from cobra's own parsing of the command line.
func run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		if ee := (*ExitError)(nil); errors.As(err, &ee) {
			return err
		}
		return &ExitError{Code: exitCode(err), Err: err}
	}
}

// exitCode maps a store or lifecycle error to an exit code: something that
// does not exist is not found; a request the store refused is the user's to
// fix; anything else is a failure.
func exitCode(err error) int {
	if errors.Is(err, store.ErrNotFound) {
		return ExitNotFound
	}
	for _, kind := range []error{store.ErrValidation, store.ErrInvalidTransition, store.ErrRequestConflict} {
		if errors.Is(err, kind) {
			return ExitUsage
		}
	}
	return ExitFailure
}

// report prints err (if any) as one line on w and returns the exit code.
func report(w io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return ExitOK
	}
	code, msg := ExitUsage, ""
	if ee := (*ExitError)(nil); errors.As(err, &ee) {
		code = ee.Code
		if ee.Err != nil {
			msg = ee.Err.Error()
		}
		if errors.Is(err, context.Canceled) {
			msg = "interrupted: " + msg
		}
	} else {
		// A parse error from cobra or pflag: point at the command's help.
		msg = oneLine(err.Error())
		if cmd != nil {
			msg += fmt.Sprintf(" (see %q)", cmd.CommandPath()+" --help")
		}
	}
	if msg != "" {
		fmt.Fprintf(w, "stint: %s\n", oneLine(msg))
	}
	return code
}

// oneLine folds a multi-line message (cobra's "Did you mean this?"
// suggestions) into one line.
func oneLine(msg string) string {
	msg = strings.Replace(msg, "\n\nDid you mean this?\n\t", "; did you mean: ", 1)
	msg = strings.ReplaceAll(msg, "\n\t", ", ")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ", ")
}
