package lifecycle

import (
	"fmt"
	"slices"
)

// Check returns an error naming the first per-state invariant j breaks: owner
// and lease present exactly in the leased states; result and error absent
// before a terminal state; each terminal state's required fields; attempt and
// revision ranges; timestamp order (LI-3).
func Check(j Job) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("job %s in state %s: %s", j.ID, j.State, fmt.Sprintf(format, args...))
	}
	if !j.State.Valid() {
		return bad("unknown state")
	}
	leased := j.Owner != "" || j.LeaseID != "" || j.LeaseExpiresAt != nil
	switch {
	case j.State.Leased() && (j.Owner == "" || j.LeaseID == "" || j.LeaseExpiresAt == nil):
		return bad("owner, lease_id and lease_expires_at must be present")
	case !j.State.Leased() && leased:
		return bad("owner and lease must be absent")
	case (j.State == CancelRequested) != (j.CancelDeadline != nil):
		return bad("cancel_deadline must be present exactly in cancel_requested")
	case j.TimeoutAt != nil && j.State != Running && j.State != CancelRequested:
		return bad("timeout_at must be absent unless running")
	case j.Rev < 1:
		return bad("rev %d must be at least 1", j.Rev)
	case j.Attempt < 0:
		return bad("attempt %d must not be negative", j.Attempt)
	case j.Failures < 0 || j.Failures > j.Attempt || j.Failures > j.MaxAttempts:
		return bad("failures %d must be within 0..min(attempt %d, max_attempts %d)", j.Failures, j.Attempt, j.MaxAttempts)
	case j.StartedAt != nil && j.StartedAt.Before(j.CreatedAt):
		return bad("started_at is before created_at (LI-3)")
	case j.FinishedAt != nil && j.StartedAt != nil && j.FinishedAt.Before(*j.StartedAt):
		return bad("finished_at is before started_at (LI-3)")
	case j.FinishedAt != nil && j.FinishedAt.Before(j.CreatedAt):
		return bad("finished_at is before created_at (LI-3)")
	case j.State.Terminal() != (j.FinishedAt != nil):
		return bad("finished_at must be present exactly in terminal states")
	}
	hasResult := j.Result != nil || j.ResultPtr != ""
	if !j.State.Terminal() {
		if hasResult || j.Error != nil {
			return bad("result and error must be absent before a terminal state")
		}
		return nil
	}
	switch j.State {
	case Succeeded:
		if !hasResult || j.Error != nil {
			return bad("result must be present and error absent")
		}
		return nil
	case Failed:
		if j.Error == nil {
			return bad("error must be present")
		}
	case TimedOut:
		if j.Error == nil || (j.Error.Code != ReasonTimeout && j.Error.Code != ReasonDeadline) {
			return bad("error code must be timeout or deadline")
		}
	case Cancelled, Halted, Denied:
		if j.Reason == "" {
			return bad("a reason must be recorded")
		}
	case DeadLettered:
		if !slices.Contains(DLQReasons, j.ReasonCode) || j.LastError == nil {
			return bad("reason_code (one of the DLQ codes) and last_error must be present")
		}
	}
	if hasResult {
		return bad("result must be absent")
	}
	return nil
}
