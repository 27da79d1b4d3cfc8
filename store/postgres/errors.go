package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/lifecycle"
)

// ErrCommitUncertain is returned when the connection failed while a
// transaction was committing: PostgreSQL may or may not have applied it, so
// the driver does not run it again. Read the jobs involved to learn the
// outcome; every write is all-or-nothing either way.
var ErrCommitUncertain = errors.New("postgres: the connection failed during commit, so the transaction may or may not have been applied; read the jobs to find out")

// The PostgreSQL error codes the driver acts on.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeUniqueViolation      = "23505"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
	codeTooManyConnections   = "53300"
)

// The unique indexes a concurrent enqueue can win a race on (see
// migrations/0001_init.sql): LI-5's dedupe key, and the primary key, since
// a repeated enqueue with the same request id derives the same job ids.
const (
	dedupeIndex = "jobs_dedupe_key_idx"
	jobsPkey    = "jobs_pkey"
)

// commitError is a COMMIT whose outcome could not be learned.
type commitError struct{ err error }

func (e *commitError) Error() string { return e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// abortedError is a failed COMMIT that the server says rolled back.
type abortedError struct{ err error }

func (e *abortedError) Error() string { return e.err.Error() }
func (e *abortedError) Unwrap() error { return e.err }

// retryable reports whether a failed transaction can run again from the
// start: it rolled back for sure, and running it again may succeed.
func retryable(ctx context.Context, err error) bool {
	var (
		le *lifecycle.Error
		ce *commitError
		ae *abortedError
	)
	switch {
	case ctx.Err() != nil || errors.As(err, &le) || errors.As(err, &ce):
		return false
	case errors.As(err, &ae):
		return true
	}
	return isConflict(err) || isConnLoss(err)
}

// rolledBack reports whether a COMMIT that failed with err surely applied
// nothing: the server answered it with a rollback. pgconn.SafeToRetry is no
// proof: pgx reports a COMMIT whose reply was lost with the connection as
// "conn closed", safe to retry, although the server may have committed.
func rolledBack(err error) bool {
	return isConflict(err) || errors.Is(err, pgx.ErrTxCommitRollback)
}

// isConflict reports a transient conflict between transactions: PostgreSQL
// rolled back one of them and the next try will see the winner's work.
func isConflict(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	case codeUniqueViolation:
		return lostEnqueueRace(pe)
	}
	return false
}

// lostEnqueueRace reports a unique violation by which a concurrent enqueue
// of the same dedupe key or request id, committed first, beat this one; the
// retry finds its job and returns it.
func lostEnqueueRace(pe *pgconn.PgError) bool {
	return pe.Code == codeUniqueViolation && (pe.ConstraintName == dedupeIndex || pe.ConstraintName == jobsPkey)
}

// isConnLoss reports an error of the connection rather than of the
// statement: the server went away, shut down, is starting, or has no
// connection slot free. The transaction is gone with the connection, and
// the pool dials a new one.
func isConnLoss(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow, codeTooManyConnections:
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection_exception
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
