package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// dlqSeeded is a database with two dead-lettered jobs and a queued one.
type dlqSeeded struct {
	db                     string
	exhausted, parse, live string
}

func newDLQSeeded(t *testing.T) dlqSeeded {
	t.Helper()
	s := dlqSeeded{db: newDB(t)}
	withStore(t, s.db, func(ctx context.Context, st store.Store) {
		s.exhausted = mustEnqueue(t, st, lifecycle.Spec{Kind: "report", Queue: "batch", MaxAttempts: 1, Payload: json.RawMessage(`{"n": 1}`)}).ID
		claimed := mustClaim(t, st, "batch", 1)
		if _, err := st.JobFail(ctx, &store.JobFailParams{
			OwnerParams: store.OwnerParams{JobID: s.exhausted, LeaseID: claimed[0].LeaseID},
			Error:       lifecycle.JobError{Code: "smtp", Message: "connection refused\n\tat line 2"},
		}); err != nil {
			t.Fatal(err)
		}
		s.parse = mustEnqueue(t, st, lifecycle.Spec{Kind: "mail"}).ID
		claimed = mustClaim(t, st, "default", 1)
		if _, err := st.JobDeadLetter(ctx, &store.JobDeadLetterParams{
			OwnerParams: store.OwnerParams{JobID: s.parse, LeaseID: claimed[0].LeaseID},
			ReasonCode:  lifecycle.ReasonParseError,
			Error:       &lifecycle.JobError{Code: lifecycle.ReasonParseError, Message: strings.Repeat("x", 200)},
		}); err != nil {
			t.Fatal(err)
		}
		s.live = mustEnqueue(t, st, lifecycle.Spec{Kind: "mail"}).ID
	})
	return s
}

func TestDLQLs(t *testing.T) {
	t.Parallel()
	s := newDLQSeeded(t)
	out := stint(t, s.db, "dlq", "ls").ok(t).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("dlq ls printed %d lines, want a header and 2 jobs:\n%s", len(lines), out)
	}
	for _, want := range [][]string{
		{s.exhausted, "report", "batch", "exhausted_retries", " exec ", "1/1", "smtp: connection refused ..."},
		{s.parse, "mail", "default", "parse_error", " input ", "1/3", "parse_error: xxx"},
	} {
		line := lines[slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, want[0]) })]
		for _, cell := range want {
			if !strings.Contains(line, cell) {
				t.Errorf("the line of %s lacks %q: %s", want[0], cell, line)
			}
		}
		if len(line) > 250 {
			t.Errorf("the line of %s is %d bytes long: the error is not cut", want[0], len(line))
		}
	}
	if strings.Contains(out, s.live) {
		t.Errorf("dlq ls lists the queued job %s:\n%s", s.live, out)
	}

	var jobs []lifecycle.Job
	out = stint(t, s.db, "dlq", "ls", "--kind", "report", "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != s.exhausted ||
		jobs[0].LastError == nil || jobs[0].LastError.Code != "smtp" || jobs[0].ReasonCode != "exhausted_retries" {
		t.Errorf("dlq ls --kind report --json printed %s (%v)", out, err)
	}
	out = stint(t, s.db, "dlq", "ls", "--queue", "nowhere", "--json").ok(t).stdout
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("an empty dlq prints %q in JSON, want []", out)
	}
}

func TestDLQReplay(t *testing.T) {
	t.Parallel()
	s := newDLQSeeded(t)
	before := getJob(t, s.db, s.exhausted)
	id := strings.TrimSpace(stint(t, s.db, "dlq", "replay", s.exhausted).ok(t).stdout)
	j := getJob(t, s.db, id)
	if j.State != lifecycle.Queued || j.ReplayOf != s.exhausted || j.ParentJobID != s.exhausted ||
		j.Kind != "report" || j.Queue != "batch" || string(j.Payload) != `{"n":1}` || j.MaxAttempts != 1 {
		t.Errorf("the replay is %+v", j)
	}
	after := getJob(t, s.db, s.exhausted)
	if after.Rev != before.Rev || after.State != lifecycle.DeadLettered {
		t.Errorf("replay changed the original: rev %d → %d, state %s", before.Rev, after.Rev, after.State)
	}

	var again lifecycle.Job
	out := stint(t, s.db, "dlq", "replay", s.exhausted, "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &again); err != nil || again.ID != id {
		t.Errorf("replaying again printed %s (%v), want the live replay %s", out, err, id)
	}
	if out := stint(t, s.db, "dlq", "ls").ok(t).stdout; !strings.Contains(out, s.exhausted) {
		t.Errorf("the replayed job left the dlq:\n%s", out)
	}
}

func TestDLQBadInput(t *testing.T) {
	t.Parallel()
	s := newDLQSeeded(t)
	before := dump(t, s.db)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"replay a queued job", []string{"dlq", "replay", s.live}, "only a dead_lettered job can be replayed; this one is queued"},
		{"replay without id", []string{"dlq", "replay"}, "takes exactly one job id"},
		{"replay two ids", []string{"dlq", "replay", s.parse, s.exhausted}, "takes exactly one job id"},
		{"unknown dlq command", []string{"dlq", "purge"}, `unknown command "purge" for "stint dlq"`},
		{"ls limit zero", []string{"dlq", "ls", "--limit", "0"}, "expected an integer from 1 to 10000"},
		{"ls with an argument", []string{"dlq", "ls", "all"}, `unknown command "all" for "stint dlq ls"`},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				stint(t, s.db, tt.args...).usageError(t, tt.want)
			})
		}
	})
	if after := dump(t, s.db); after != before {
		t.Errorf("bad input changed the database")
	}
	// Without a database, dlq commands create none.
	db := newDB(t)
	stint(t, db, "dlq", "ls").usageError(t, "no database at")
}
