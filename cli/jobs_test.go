package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
)

func TestJobsLs(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all, oldest first", nil, []string{s.done, s.running, s.scheduled, s.queued}},
		{"one state", []string{"--state", "running"}, []string{s.running}},
		{"states comma-separated", []string{"--state", "queued,succeeded"}, []string{s.done, s.queued}},
		{"states repeated", []string{"--state", "queued", "--state", "scheduled"}, []string{s.scheduled, s.queued}},
		{"queue", []string{"--queue", "batch"}, []string{s.done, s.running}},
		{"kind", []string{"--kind", "mail"}, []string{s.scheduled, s.queued}},
		{"queue and state", []string{"--queue", "batch", "--state", "queued"}, nil},
		{"limit", []string{"--limit", "2"}, []string{s.done, s.running}},
		{"after", []string{"--after", s.running}, []string{s.scheduled, s.queued}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			human := stint(t, s.db, append([]string{"jobs", "ls"}, tt.args...)...).ok(t).stdout
			lines := strings.Split(strings.TrimSuffix(human, "\n"), "\n")
			if !strings.HasPrefix(lines[0], "ID ") {
				t.Fatalf("table starts %q, want the header", lines[0])
			}
			var ids []string
			for _, l := range lines[1:] {
				ids = append(ids, strings.Fields(l)[0])
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("table lists %v, want %v:\n%s", ids, tt.want, human)
			}

			out := stint(t, s.db, append([]string{"jobs", "ls", "--json"}, tt.args...)...).ok(t).stdout
			var jobs []lifecycle.Job
			if err := json.Unmarshal([]byte(out), &jobs); err != nil || jobs == nil {
				t.Fatalf("--json printed %q (%v), want a JSON array", out, err)
			}
			ids = nil
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("--json lists %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestJobsShow(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	human := stint(t, s.db, "jobs", "show", s.done).ok(t).stdout
	for _, want := range []string{"id:          " + s.done, "state:       succeeded", "result:      {\"pages\":3}", "attempt:     1 of 3", "last_owner:  w1"} {
		if !strings.Contains(human, want+"\n") {
			t.Errorf("show lacks the line %q:\n%s", want, human)
		}
	}
	if strings.Contains(human, "lease_id:") {
		t.Errorf("show prints an empty lease_id:\n%s", human)
	}

	var j lifecycle.Job
	out := stint(t, s.db, "jobs", "show", s.done, "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.ID != s.done || j.State != lifecycle.Succeeded {
		t.Errorf("--json printed %q (%v)", out, err)
	}
}

func TestJobsEvents(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	human := stint(t, s.db, "jobs", "events", s.done).ok(t).stdout
	var types []string
	for _, l := range strings.Split(strings.TrimSuffix(human, "\n"), "\n")[1:] {
		types = append(types, strings.Fields(l)[1])
	}
	if want := []string{"enqueued", "claimed", "started", "succeeded"}; !slices.Equal(types, want) {
		t.Errorf("event types %v, want %v:\n%s", types, want, human)
	}

	out := stint(t, s.db, "jobs", "events", s.done, "--json").ok(t).stdout
	var events []map[string]any
	if err := json.Unmarshal([]byte(out), &events); err != nil || len(events) != 4 {
		t.Fatalf("--json printed %q (%v), want 4 events", out, err)
	}
	for _, k := range []string{"type", "from_state", "to_state", "at", "actor", "rev", "attempt"} {
		if _, ok := events[3][k]; !ok {
			t.Errorf("event JSON lacks %q: %v", k, events[3])
		}
	}
	if events[3]["to_state"] != "succeeded" || events[3]["from_state"] != "running" {
		t.Errorf("last event %v, want running → succeeded", events[3])
	}
}

func TestJobsCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		job   func(seeded) string
		args  []string
		state lifecycle.State
	}{
		{"queued job at once", func(s seeded) string { return s.queued }, nil, lifecycle.Cancelled},
		{"scheduled job at once", func(s seeded) string { return s.scheduled }, nil, lifecycle.Cancelled},
		{"running job asks its owner", func(s seeded) string { return s.running }, nil, lifecycle.CancelRequested},
		{"running job, hard", func(s seeded) string { return s.running }, []string{"--hard"}, lifecycle.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSeeded(t)
			id := tt.job(s)
			out := stint(t, s.db, append([]string{"jobs", "cancel", id, "--reason", "not needed"}, tt.args...)...).ok(t).stdout
			if want := "job " + id + ": " + string(tt.state); !strings.HasPrefix(out, want) {
				t.Errorf("printed %q, want it to start %q", out, want)
			}
			j := getJob(t, s.db, id)
			if j.State != tt.state {
				t.Errorf("job is %s, want %s", j.State, tt.state)
			}
			events := stint(t, s.db, "jobs", "events", id, "--json").ok(t).stdout
			if !strings.Contains(events, `"reason": "not needed"`) {
				t.Errorf("the cancel event lacks the reason:\n%s", events)
			}
		})
	}
}

func TestJobsCancelJSON(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	out := stint(t, s.db, "jobs", "cancel", s.queued, "--json").ok(t).stdout
	var j lifecycle.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.ID != s.queued || j.State != lifecycle.Cancelled {
		t.Errorf("--json printed %q (%v), want the cancelled job", out, err)
	}
}
