package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/store"
)

func TestVerifyClean(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	stint(t, s.db, "jobs", "cancel", s.running).ok(t) // cancel_requested
	stint(t, s.db, "jobs", "cancel", s.queued).ok(t)  // cancelled

	r := stint(t, s.db, "verify").ok(t)
	// done: 4 events; running: 3 + cancel_requested; scheduled: 1; queued: 2.
	if want := "verified 4 jobs, 11 events: 0 findings\n"; r.stdout != want {
		t.Errorf("verify printed %q, want %q", r.stdout, want)
	}

	var rep store.VerifyReport
	out := stint(t, s.db, "verify", "--json").ok(t).stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Jobs != 4 || rep.Events != 11 || rep.Findings == nil || len(rep.Findings) != 0 {
		t.Errorf("--json printed %q (%v)", out, err)
	}
}

// TestVerifyFindsCorruption corrupts one row behind the store's back and
// expects verify to name that job, and only that job.
func TestVerifyFindsCorruption(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		job     func(seeded) string
		corrupt string // SQL with one parameter, the job id
	}{
		{"succeeded job set back to queued", func(s seeded) string { return s.done },
			`UPDATE jobs SET state = 'queued' WHERE id = ?`},
		{"revision bumped without an event", func(s seeded) string { return s.queued },
			`UPDATE jobs SET rev = rev + 1 WHERE id = ?`},
		{"attempt changed", func(s seeded) string { return s.running },
			`UPDATE jobs SET attempt = 2 WHERE id = ?`},
		{"event deleted", func(s seeded) string { return s.running },
			`DELETE FROM job_events WHERE job_id = ? AND rev = 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSeeded(t)
			stint(t, s.db, "verify").ok(t)
			id := tt.job(s)
			if _, err := rawDB(t, s.db, false).ExecContext(t.Context(), tt.corrupt, id); err != nil {
				t.Fatal(err)
			}

			r := stint(t, s.db, "verify")
			if r.code != cli.ExitFailure || r.stderr != "" {
				t.Fatalf("verify: exit %d, stderr %q; want exit 1 and no error", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], id+": ") || !strings.HasSuffix(lines[1], ": 1 finding") {
				t.Errorf("verify printed %q, want one finding for %s and the summary", r.stdout, id)
			}

			r = stint(t, s.db, "verify", "--json")
			var rep store.VerifyReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != cli.ExitFailure {
				t.Fatalf("verify --json: exit %d, %q (%v)", r.code, r.stdout, err)
			}
			if len(rep.Findings) != 1 || rep.Findings[0].JobID != id || rep.Findings[0].Problem == "" {
				t.Errorf("findings %+v, want one for %s", rep.Findings, id)
			}
		})
	}
}
