package lifecycle

import (
	"fmt"
	"time"
)

// ReplayedRun is what a run's event log says about it.
type ReplayedRun struct {
	State      RunState
	Rev        int64
	ReasonCode string
	Reason     string
	RerunOf    string // the creation event's reason
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	ReportedAt *time.Time
	UpdatedAt  time.Time // the last event's time
}

// ReplayRun walks a run's events in order from ∅ and returns where they lead.
// It fails at the first event the run transition table does not explain, that
// does not start where the previous one ended, or that skips a revision.
func ReplayRun(events []RunEvent) (ReplayedRun, error) {
	var r ReplayedRun
	for i, e := range events {
		at := func(format string, args ...any) error {
			return fmt.Errorf("run event %d (id %d, %s %s→%s, rev %d): %s", i+1, e.ID, e.Type, e.FromState, e.ToState, e.Rev, fmt.Sprintf(format, args...))
		}
		if e.FromState != r.State {
			return r, at("starts from %s but the run was %s", e.FromState, r.State)
		}
		edge, ok := findRunEdge(e.Op, e.Actor, e.FromState)
		if !ok || edge.To != e.ToState || edge.Event != e.Type {
			return r, at("no row of the run transition table explains %s by %s", e.Op, e.Actor)
		}
		if e.Op == RunOpReport && r.ReportedAt != nil {
			return r, at("the run was already reported")
		}
		if e.Rev != r.Rev+1 {
			return r, at("rev must be %d", r.Rev+1)
		}
		t := e.At
		switch {
		case e.Op == RunOpCreate:
			r.CreatedAt, r.RerunOf = t, e.Reason
		case e.Op == RunOpReport: // keeps the reason of the run's end
		case e.ReasonCode != "" || e.Reason != "":
			r.ReasonCode, r.Reason = e.ReasonCode, e.Reason
		}
		switch {
		case e.Op == RunOpReport:
			r.ReportedAt = &t
		case e.Op == RunOpStart:
			r.StartedAt = &t
		case e.ToState.Terminal():
			r.FinishedAt = &t
		}
		r.State, r.Rev, r.UpdatedAt = e.ToState, e.Rev, t
	}
	return r, nil
}

// CheckRun returns an error naming the first invariant run breaks: a known
// state, rev at least 1, finished_at present exactly in terminal states,
// reported_at only on a terminal run, timestamps in order.
func CheckRun(run Run) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("run %s in state %s: %s", run.ID, run.State, fmt.Sprintf(format, args...))
	}
	switch {
	case !run.State.Valid():
		return bad("unknown state")
	case run.Rev < 1:
		return bad("rev %d must be at least 1", run.Rev)
	case run.State.Terminal() != (run.FinishedAt != nil):
		return bad("finished_at must be present exactly in terminal states")
	case run.ReportedAt != nil && !run.State.Terminal():
		return bad("reported_at must be absent before a terminal state")
	case run.FinishedAt != nil && run.FinishedAt.Before(run.CreatedAt):
		return bad("finished_at is before created_at")
	case run.ReportedAt != nil && run.ReportedAt.Before(*run.FinishedAt):
		return bad("reported_at is before finished_at")
	case run.OnFailure != FailCancel && run.OnFailure != FailContinue:
		return bad("on_failure %q is not %q or %q", run.OnFailure, FailCancel, FailContinue)
	}
	return nil
}

// VerifyRun checks a run row against its events: the replay must explain
// them, and reproduce every column an event sets (state, rev, reason_code,
// reason, rerun_of, created_at, started_at, finished_at, reported_at,
// updated_at) and timeout_at, which is created_at plus the row's timeout;
// the row must keep its invariants.
func VerifyRun(run Run, events []RunEvent) error {
	if err := CheckRun(run); err != nil {
		return err
	}
	r, err := ReplayRun(events)
	if err != nil {
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	var diffs []string
	if r.State != run.State {
		diffs = append(diffs, fmt.Sprintf("state: row says %s, events say %s", run.State, r.State))
	}
	if r.Rev != run.Rev {
		diffs = append(diffs, fmt.Sprintf("rev: row says %d, events say %d", run.Rev, r.Rev))
	}
	for _, c := range []struct{ name, row, want string }{
		{"reason_code", run.ReasonCode, r.ReasonCode}, {"reason", run.Reason, r.Reason}, {"rerun_of", run.RerunOf, r.RerunOf},
	} {
		if c.row != c.want {
			diffs = append(diffs, fmt.Sprintf("%s: row says %q, events say %q", c.name, c.row, c.want))
		}
	}
	var timeoutAt *time.Time
	if run.Timeout > 0 && len(events) > 0 {
		t := later(r.CreatedAt, run.Timeout.D())
		timeoutAt = &t
	}
	created, updated := &r.CreatedAt, &r.UpdatedAt
	if len(events) == 0 {
		created, updated = nil, nil
	}
	for _, c := range []struct {
		name      string
		row, want *time.Time
	}{
		{"created_at", &run.CreatedAt, created}, {"started_at", run.StartedAt, r.StartedAt},
		{"finished_at", run.FinishedAt, r.FinishedAt}, {"reported_at", run.ReportedAt, r.ReportedAt},
		{"updated_at", &run.UpdatedAt, updated},
	} {
		if !sameTimePtr(c.row, c.want) {
			diffs = append(diffs, fmt.Sprintf("%s: row says %s, events say %s", c.name, show(c.row), show(c.want)))
		}
	}
	if !sameTimePtr(run.TimeoutAt, timeoutAt) {
		diffs = append(diffs, fmt.Sprintf("timeout_at: row says %s, created_at (from the events) plus the timeout %s say %s",
			show(run.TimeoutAt), run.Timeout.D(), show(timeoutAt)))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("run %s: %v", run.ID, diffs)
	}
	return nil
}
