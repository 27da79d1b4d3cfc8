package store

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// A transition writes only the columns it changes. The engine hands each
// update the job as it was at the rev it replaces (JobUpdate.Prev: the row
// it read, or the record a completing owner held); a driver compares it
// with the new job and sets only the columns that differ (a completion
// changes about 15 of the 38), one statement for a batch through the union
// of their changes. This file is the one list of those columns that both
// drivers follow.

// MutableColumns are the columns of a job row that a transition may
// change, in the order of the bits of ChangedColumns' masks. Each driver
// checks that its own list is in this order.
var MutableColumns = [...]string{"state", "attempt", "failures", "rev", "run_at", "owner", "lease_id",
	"lease_expires_at", "timeout_at", "cancel_deadline", "lease_ended_by", "last_owner", "last_lease_id",
	"last_lease_expires_at", "checkpoint", "progress", "phase", "usage_steps", "usage_cost", "usage_runtime_ms",
	"result", "result_ptr", "result_digest", "error_code", "error_message", "error_class", "error_attempt",
	"last_error_code", "last_error_message", "last_error_class", "last_error_attempt", "reason_code", "reason",
	"execution_ms", "updated_at", "started_at", "attempt_started_at", "finished_at"}

// sameColumn reports, for each of MutableColumns in order, whether two jobs
// have the same value in it as a driver stores it: an error's columns
// differ between a job with one and a job without, whatever the values.
var sameColumn = [len(MutableColumns)]func(a, b *lifecycle.Job) bool{
	func(a, b *lifecycle.Job) bool { return a.State == b.State },
	func(a, b *lifecycle.Job) bool { return a.Attempt == b.Attempt },
	func(a, b *lifecycle.Job) bool { return a.Failures == b.Failures },
	func(a, b *lifecycle.Job) bool { return a.Rev == b.Rev },
	func(a, b *lifecycle.Job) bool { return a.RunAt.Equal(b.RunAt) },
	func(a, b *lifecycle.Job) bool { return a.Owner == b.Owner },
	func(a, b *lifecycle.Job) bool { return a.LeaseID == b.LeaseID },
	func(a, b *lifecycle.Job) bool { return sameAt(a.LeaseExpiresAt, b.LeaseExpiresAt) },
	func(a, b *lifecycle.Job) bool { return sameAt(a.TimeoutAt, b.TimeoutAt) },
	func(a, b *lifecycle.Job) bool { return sameAt(a.CancelDeadline, b.CancelDeadline) },
	func(a, b *lifecycle.Job) bool { return a.LeaseEndedBy == b.LeaseEndedBy },
	func(a, b *lifecycle.Job) bool { return a.LastOwner == b.LastOwner },
	func(a, b *lifecycle.Job) bool { return a.LastLeaseID == b.LastLeaseID },
	func(a, b *lifecycle.Job) bool { return sameAt(a.LastLeaseExpiresAt, b.LastLeaseExpiresAt) },
	func(a, b *lifecycle.Job) bool { return sameRaw(a.Checkpoint, b.Checkpoint) },
	func(a, b *lifecycle.Job) bool { return sameRaw(a.Progress, b.Progress) },
	func(a, b *lifecycle.Job) bool { return a.Phase == b.Phase },
	func(a, b *lifecycle.Job) bool { return a.Usage.Steps == b.Usage.Steps },
	func(a, b *lifecycle.Job) bool { return a.Usage.Cost == b.Usage.Cost },
	func(a, b *lifecycle.Job) bool { return a.Usage.RuntimeMS == b.Usage.RuntimeMS },
	func(a, b *lifecycle.Job) bool { return sameRaw(a.Result, b.Result) },
	func(a, b *lifecycle.Job) bool { return a.ResultPtr == b.ResultPtr },
	func(a, b *lifecycle.Job) bool { return a.ResultDigest == b.ResultDigest },
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.Error, b.Error) && errField(a.Error).Code == errField(b.Error).Code
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.Error, b.Error) && errField(a.Error).Message == errField(b.Error).Message
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.Error, b.Error) && errField(a.Error).Class == errField(b.Error).Class
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.Error, b.Error) && errField(a.Error).Attempt == errField(b.Error).Attempt
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.LastError, b.LastError) && errField(a.LastError).Code == errField(b.LastError).Code
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.LastError, b.LastError) && errField(a.LastError).Message == errField(b.LastError).Message
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.LastError, b.LastError) && errField(a.LastError).Class == errField(b.LastError).Class
	},
	func(a, b *lifecycle.Job) bool {
		return sameErr(a.LastError, b.LastError) && errField(a.LastError).Attempt == errField(b.LastError).Attempt
	},
	func(a, b *lifecycle.Job) bool { return a.ReasonCode == b.ReasonCode },
	func(a, b *lifecycle.Job) bool { return a.Reason == b.Reason },
	func(a, b *lifecycle.Job) bool { return a.ExecutionMS == b.ExecutionMS },
	func(a, b *lifecycle.Job) bool { return a.UpdatedAt.Equal(b.UpdatedAt) },
	func(a, b *lifecycle.Job) bool { return sameAt(a.StartedAt, b.StartedAt) },
	func(a, b *lifecycle.Job) bool { return sameAt(a.AttemptStartedAt, b.AttemptStartedAt) },
	func(a, b *lifecycle.Job) bool { return sameAt(a.FinishedAt, b.FinishedAt) },
}

// AllMutable is the mask of every one of MutableColumns.
const AllMutable = uint64(1)<<len(MutableColumns) - 1

// ChangedColumns returns mask with the bits added of the MutableColumns
// (bit i: MutableColumns[i]) whose values differ between prev and next.
func ChangedColumns(prev, next *lifecycle.Job, mask uint64) uint64 {
	for i, same := range sameColumn {
		if mask&(1<<i) == 0 && !same(prev, next) {
			mask |= 1 << i
		}
	}
	return mask
}

// Updates returns the union of the changed columns of us (AllMutable when
// one of them does not know the row it replaces): the columns one
// statement must set to write them all. Writing a column with the value
// it has is harmless.
func Updates(us []JobUpdate) uint64 {
	var mask uint64
	for i := range us {
		if !us[i].KnownPrev() {
			return AllMutable
		}
		mask = ChangedColumns(&us[i].Prev, &us[i].Job, mask)
	}
	return mask
}

func sameAt(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func sameRaw(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// sameErr reports whether a and b are both errors or both none: a row
// without one may hold NULL in each of its columns.
func sameErr(a, b *lifecycle.JobError) bool { return (a == nil) == (b == nil) }

// errField is *e, or the zero error (what a row holds without one).
func errField(e *lifecycle.JobError) lifecycle.JobError {
	if e == nil {
		return lifecycle.JobError{}
	}
	return *e
}
