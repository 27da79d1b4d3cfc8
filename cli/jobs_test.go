package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
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
		{"all", []string{"--all", "--limit", "1"}, []string{s.done, s.running, s.scheduled, s.queued}},
		{"newest first", []string{"--newest"}, []string{s.queued, s.scheduled, s.running, s.done}},
		{"newest first, after", []string{"--newest", "--after", s.scheduled}, []string{s.running, s.done}},
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
	fields := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(human), "\n") {
		k, v, _ := strings.Cut(l, ":")
		fields[k] = strings.TrimSpace(v)
	}
	want := map[string]string{"id": s.done, "state": "succeeded", "result": `{"pages":3}`, "attempt": "1", "failures": "0",
		"max_attempts": "3", "last_owner": "w1", "execution_ms": "", "provenance": "succeeded after 1 attempts, 4 events, sha256:",
		"lease_state": "completed"}
	for k, v := range want {
		if got, ok := fields[k]; !strings.HasPrefix(got, v) || (!ok && v != "") {
			t.Errorf("show's %s is %q, want %q:\n%s", k, got, v, human)
		}
	}
	if _, ok := fields["lease_id"]; ok {
		t.Errorf("show prints an empty lease_id:\n%s", human)
	}

	var j struct {
		lifecycle.Job
		LeaseState string `json:"lease_state"`
	}
	out := stint(t, s.db, "jobs", "show", s.done, "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.ID != s.done || j.State != lifecycle.Succeeded || j.LeaseState != "completed" {
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

// jobs show prints every field that is set, and jobs events the error of
// each failed attempt.
func TestJobsShowAndEventsOfAFailedAttempt(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var id string
	withStore(t, db, func(ctx context.Context, st store.Store) {
		id = mustEnqueue(t, st, lifecycle.Spec{Kind: "import", Env: map[string]string{"locale": "de"}, ContextPtr: "s3://b/k",
			Budget: &lifecycle.Budget{MaxSteps: 100}, CorrelationID: "req-9", TraceID: "trace-9"}).ID
		c := mustClaim(t, st, lifecycle.DefaultQueue, 1)[0]
		own := store.OwnerParams{JobID: id, LeaseID: c.LeaseID}
		if _, err := st.JobCheckpoint(ctx, &store.JobCheckpointParams{OwnerParams: own, Checkpoint: json.RawMessage(`{"row":40}`),
			Progress: json.RawMessage(`{"pct":40}`), Phase: "uploading", Steps: 40}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.JobFail(ctx, &store.JobFailParams{OwnerParams: own, ExecutionMS: 1234,
			Error: lifecycle.JobError{Code: "upstream", Message: "the bank said 503"}}); err != nil {
			t.Fatal(err)
		}
	})
	show := stint(t, db, "jobs", "show", id).ok(t).stdout
	for _, want := range []string{"failures:", "env:", "locale=de", "context_ptr:", "s3://b/k", "budget:", "steps 100", "usage:",
		"steps 40", "checkpoint:", `{"row":40}`, "progress:", `{"pct":40}`, "phase:", "uploading", "last_error:",
		"upstream: the bank said 503", "correlation_id:", "trace_id:", "trace-9", "state:", "retrying", "lease_state:", "completed"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	events := stint(t, db, "jobs", "events", id).ok(t).stdout
	var failedRow, phaseRow string
	for l := range strings.SplitSeq(events, "\n") {
		if strings.Contains(l, "retry_scheduled") {
			failedRow = l
		}
		if strings.Contains(l, "checkpointed") {
			phaseRow = l
		}
	}
	if !strings.Contains(phaseRow, "phase uploading") {
		t.Errorf("the checkpointed row %q does not say it entered phase uploading:\n%s", phaseRow, events)
	}
	if !strings.Contains(failedRow, "upstream: the bank said 503") || !regexp.MustCompile(`T\d\d:\d\d:\d\d\.\d{3}Z`).MatchString(failedRow) {
		t.Errorf("the retry_scheduled row %q lacks the error or a time to the millisecond:\n%s", failedRow, events)
	}
}

// jobs ls pages: a page says when more follow and how to get them, --after
// takes the page on, and an --after that names no job is an error.
func TestJobsLsPages(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	first := stint(t, s.db, "jobs", "ls", "--limit", "2").ok(t).stdout
	if !strings.Contains(first, s.running) || strings.Contains(first, s.scheduled) ||
		!strings.Contains(first, "(more jobs follow: add --after "+s.running+" for the next page") {
		t.Errorf("first page:\n%s", first)
	}
	r := stint(t, s.db, "jobs", "ls", "--limit", "2", "--json")
	if r.code != cli.ExitOK || !strings.Contains(r.stderr, "--after "+s.running) {
		t.Errorf("--json page: exit %d, stderr %q: want the hint on stderr", r.code, r.stderr)
	}
	second := stint(t, s.db, "jobs", "ls", "--limit", "2", "--after", s.running).ok(t).stdout
	if !strings.Contains(second, s.queued) || strings.Contains(second, "more jobs follow") {
		t.Errorf("last page:\n%s", second)
	}
	newest := stint(t, s.db, "jobs", "ls", "--newest", "--limit", "1").ok(t).stdout
	if !strings.Contains(newest, s.queued) || !strings.Contains(newest, "--after "+s.queued) {
		t.Errorf("newest page:\n%s", newest)
	}
	stint(t, s.db, "jobs", "ls", "--after", "garbage").usageError(t, `--after "garbage" names no job`)
}
