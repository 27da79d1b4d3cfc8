package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Derived is what a job's events say the columns a store reads must hold:
// the ones a claim, a filter, a maintenance query or a unique index uses.
type Derived struct {
	Replayed
	// Failures counts the attempts that ended in failure, timeout or lease
	// loss by expiry (see [FailedAttempt]).
	Failures int
	// SpecDigest is the enqueued (or denied) event's; "" for a log written
	// before events carried it.
	SpecDigest string
	// CreatedAt is the time of the enqueued (or denied) event.
	CreatedAt time.Time
	// RunAt is the due time the last event that set one set; nil for a log
	// written before events carried it.
	RunAt *time.Time
	// Owner, LeaseID and LeaseExpiresAt are the current lease's: its claim
	// and its last renewal. Empty when the job holds no lease;
	// LeaseExpiresAt is nil too for a log written before events carried it.
	Owner, LeaseID string
	LeaseExpiresAt *time.Time
	// StartedAt is when the current attempt started (nil unless running or
	// cancel requested after a start); timeout_at counts from it.
	StartedAt *time.Time
	// CancelRequestedAt is when the current cancel was requested, and
	// CancelDeadline the deadline its event recorded (nil when it used the
	// job's cancel grace).
	CancelRequestedAt, CancelDeadline *time.Time
	// FinishedAt is the time of the terminal event; nil before one.
	FinishedAt *time.Time
	// LastAt is the time of the last event.
	LastAt time.Time
}

// Derive replays events (see [Replay]) and returns what they say the job's
// row must hold.
func Derive(events []Event) (Derived, error) {
	r, err := Replay(events)
	if err != nil {
		return Derived{}, err
	}
	d := Derived{Replayed: r}
	for _, e := range events {
		at := e.At
		d.LastAt = at
		if e.Type == EventEnqueued || e.Type == EventDenied {
			d.CreatedAt, d.SpecDigest = at, e.SpecDigest
		}
		if e.RunAt != nil {
			t := *e.RunAt
			d.RunAt = &t
		}
		if FailedAttempt(e.Op, e.Actor, e.FromState) {
			d.Failures++
		}
		switch {
		case e.ToState.Leased():
			if e.Type == EventClaimed {
				d.Owner, d.LeaseID = e.ActorID, e.LeaseID
			}
			if e.LeaseExpiresAt != nil {
				t := *e.LeaseExpiresAt
				d.LeaseExpiresAt = &t
			}
			if e.Type == EventStarted {
				d.StartedAt = &at
			}
			if e.Type == EventCancelRequested {
				d.CancelRequestedAt, d.CancelDeadline = &at, cancelDeadlineOf(e)
			}
		default:
			d.Owner, d.LeaseID, d.LeaseExpiresAt, d.StartedAt = "", "", nil, nil
			d.CancelRequestedAt, d.CancelDeadline = nil, nil
		}
		if e.ToState.Terminal() {
			d.FinishedAt = &at
		}
	}
	return d, nil
}

// FailedAttempt reports whether a transition by op and actor from state from
// ends an attempt in failure: a fail, a dead letter by the owner, a timeout of
// a leased job, or a lease lost by expiry. A release (the owner's stall on a
// graceful stop), a cancel, a completion or a halt is not a failure. The
// retry budget (max_attempts) counts these, not claims.
func FailedAttempt(op Op, actor Actor, from State) bool {
	if !from.Leased() {
		return false
	}
	switch op {
	case OpFail, OpTimeOut:
		return true
	case OpDeadLetter:
		return actor == ActorOwner
	case OpStall:
		return actor == ActorSystem
	}
	return false
}

// cancelDetails is the detail a cancel_requested event records when the
// cancel overrode the job's cancel grace.
type cancelDetails struct {
	CancelDeadline *time.Time `json:"cancel_deadline,omitempty"`
}

func cancelDeadlineOf(e Event) *time.Time {
	if len(e.Details) == 0 {
		return nil
	}
	var c cancelDetails
	if json.Unmarshal(e.Details, &c) != nil {
		return nil
	}
	return c.CancelDeadline
}

// Verify checks a job row against its events: the replay must be clean and
// end in the row's state, attempt and rev; every column a store reads must
// hold what the events say (see [Derived]); and the row must meet [Check].
// The error names each column that disagrees, as "lease_expires_at: row says
// X, events say Y".
func Verify(j Job, events []Event) error {
	d, err := Derive(events)
	if err != nil {
		return err
	}
	if d.State != j.State || d.Attempt != j.Attempt || (d.Rev != j.Rev && !trailingHeartbeats(j, d)) {
		return fmt.Errorf("state, attempt, rev: events replay to state %s attempt %d rev %d, but the row says state %s attempt %d rev %d",
			d.State, d.Attempt, d.Rev, j.State, j.Attempt, j.Rev)
	}
	if problems := columns(j, d); len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return Check(j)
}

// trailingHeartbeats reports whether the revisions the row has beyond its
// last event can only be heartbeats that retention pruned: the job is in the
// same leased state and attempt, and its row was written after that event.
func trailingHeartbeats(j Job, d Derived) bool {
	return j.Rev > d.Rev && j.State.Leased() && j.UpdatedAt.After(d.LastAt)
}

// columns compares the row's columns with what the events derive.
func columns(j Job, d Derived) []string {
	var out []string
	bad := func(col string, row, events any) {
		out = append(out, fmt.Sprintf("%s: row says %s, events say %s", col, show(row), show(events)))
	}
	if d.SpecDigest != "" {
		if got := SpecDigest(j); got != d.SpecDigest {
			out = append(out, fmt.Sprintf("spec (tenant, kind, queue, topic, priority, dedupe_key, deadline, payload, ...): "+
				"the row's spec digests to %s, the enqueued event says %s", got, d.SpecDigest))
		}
	}
	if j.Failures != d.Failures {
		bad("failures", j.Failures, d.Failures)
	}
	if !j.CreatedAt.Equal(d.CreatedAt) {
		bad("created_at", j.CreatedAt, d.CreatedAt)
	}
	if d.RunAt != nil && !j.RunAt.Equal(*d.RunAt) {
		bad("run_at", j.RunAt, *d.RunAt)
	}
	if j.Owner != d.Owner {
		bad("owner", j.Owner, d.Owner)
	}
	if j.LeaseID != d.LeaseID {
		bad("lease_id", j.LeaseID, d.LeaseID)
	}
	switch {
	case d.Rev != j.Rev: // pruned heartbeats renewed the lease after the last event
		if j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.After(d.LastAt) {
			bad("lease_expires_at", j.LeaseExpiresAt, "a time after "+show(d.LastAt))
		}
	case d.LeaseExpiresAt != nil || !j.State.Leased():
		if !sameTimePtr(j.LeaseExpiresAt, d.LeaseExpiresAt) {
			bad("lease_expires_at", j.LeaseExpiresAt, d.LeaseExpiresAt)
		}
	}
	var timeoutAt *time.Time
	if d.StartedAt != nil && j.Timeout > 0 {
		t := later(*d.StartedAt, j.Timeout.D())
		timeoutAt = &t
	}
	if !sameTimePtr(j.TimeoutAt, timeoutAt) {
		bad("timeout_at", j.TimeoutAt, timeoutAt)
	}
	cancelAt := d.CancelDeadline
	if cancelAt == nil && d.CancelRequestedAt != nil {
		t := later(*d.CancelRequestedAt, firstDuration(j.CancelGrace.D(), DefaultCancelGrace))
		cancelAt = &t
	}
	if !sameTimePtr(j.CancelDeadline, cancelAt) {
		bad("cancel_deadline", j.CancelDeadline, cancelAt)
	}
	if !sameTimePtr(j.FinishedAt, d.FinishedAt) {
		bad("finished_at", j.FinishedAt, d.FinishedAt)
	}
	want := ""
	if j.State.Terminal() {
		want = ResultDigest(j.Result, j.ResultPtr)
	}
	if j.ResultDigest != want {
		out = append(out, fmt.Sprintf("result_digest: row says %q, the result digests to %q (LI-4)", j.ResultDigest, want))
	}
	return out
}

func sameTimePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// show formats a column value for a finding.
func show(v any) string {
	switch x := v.(type) {
	case *time.Time:
		if x == nil {
			return "NULL"
		}
		return x.UTC().Format(time.RFC3339Nano)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	return fmt.Sprint(v)
}
