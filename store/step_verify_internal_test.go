package store

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
)

// TestVerifySteps: verify finds a step record that its events do not
// explain: a gap, a superseded lease, a missing record or event.
func TestVerifySteps(t *testing.T) {
	t.Parallel()
	claimed := func(attempt int, lease string) Event {
		return Event{Type: lifecycle.EventClaimed, Attempt: attempt, LeaseID: lease}
	}
	step := func(attempt int, lease string, seq int, name string) Event {
		d, _ := json.Marshal(lifecycle.StepDetails{Seq: seq, Name: name})
		return Event{Type: lifecycle.EventStepRecorded, Attempt: attempt, LeaseID: lease, Details: d}
	}
	rec := func(attempt int, lease string, seq int, name string) StepRecord {
		return StepRecord{Seq: seq, Name: name, Attempt: attempt, LeaseID: lease}
	}
	events := []Event{claimed(1, "L1"), step(1, "L1", 1, "a"), claimed(2, "L2"), step(2, "L2", 2, "b")}
	good := []StepRecord{rec(1, "L1", 1, "a"), rec(2, "L2", 2, "b")}
	cases := []struct {
		name   string
		events []Event
		recs   []StepRecord
		want   string
	}{
		{"clean", events, good, ""},
		{"gap", events, []StepRecord{good[0], rec(2, "L2", 3, "b")}, "gap"},
		{"superseded_lease", []Event{claimed(1, "L1"), step(1, "L0", 1, "a")}, []StepRecord{rec(1, "L0", 1, "a")}, "not the lease"},
		{"record_without_event", events[:2], good, "no step_recorded event"},
		{"event_without_record", events, good[:1], "no record"},
		{"renamed", events, []StepRecord{good[0], rec(2, "L2", 2, "c")}, `"c" in its record`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := verifySteps(c.events, c.recs)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("verifySteps = %q, want a problem containing %q", got, c.want)
			}
		})
	}
}
