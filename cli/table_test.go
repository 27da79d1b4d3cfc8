package cli_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// newFixedDB creates a database whose ids are job-1, job-2, ... (leases
// lease-N) and whose clock stands at 2026-01-02T03:04:05Z, holding a
// succeeded job, a queued one and a scheduled one.
func newFixedDB(t *testing.T) string {
	t.Helper()
	db := newDB(t)
	clk := fixedClock()
	d, err := sqlite.Open(t.Context(), db, sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	st := store.New(d, store.Options{NewID: func() string { n++; return fmt.Sprintf("id-%d", n) }})
	defer st.Close()

	ctx := t.Context()
	done := mustEnqueue(t, st, lifecycle.Spec{Kind: "report.build", Queue: "batch", Priority: lifecycle.PriorityBatch})
	mustEnqueue(t, st, lifecycle.Spec{Kind: "email.send"})
	runAt := clk.Now().Add(90 * time.Minute)
	mustEnqueue(t, st, lifecycle.Spec{Kind: "email.send", RunAt: &runAt})
	clk.Advance(time.Minute)
	claimed := mustClaim(t, st, "batch", 1)
	clk.Advance(2 * time.Second)
	if _, err := st.JobComplete(ctx, []store.JobCompleteParams{{
		OwnerParams: store.OwnerParams{JobID: done.ID, LeaseID: claimed[0].LeaseID},
		Result:      []byte(`{"pages": 3}`),
	}}); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestTables(t *testing.T) {
	t.Parallel()
	db := newFixedDB(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"jobs ls", []string{"jobs", "ls"}, `
ID    KIND          QUEUE    STATE      ATTEMPT  REV  RUN_AT                CREATED
id-1  report.build  batch    succeeded  1        4    2026-01-02T03:04:05Z  2026-01-02T03:04:05Z
id-2  email.send    default  queued     0        1    2026-01-02T03:04:05Z  2026-01-02T03:04:05Z
id-3  email.send    default  scheduled  0        1    2026-01-02T04:34:05Z  2026-01-02T03:04:05Z
`},
		{"jobs events", []string{"jobs", "events", "id-1"}, `
REV  TYPE       FROM     TO         ACTOR     ATTEMPT  AT                        REASON  ERROR
1    enqueued   ∅        queued     client    0        2026-01-02T03:04:05.000Z  -       -
2    claimed    queued   claimed    owner/w1  1        2026-01-02T03:05:05.000Z  -       -
3    started    claimed  running    owner/w1  1        2026-01-02T03:05:05.000Z  -       -
4    succeeded  running  succeeded  owner/w1  1        2026-01-02T03:05:07.000Z  -       -
`},
		{"jobs show", []string{"jobs", "show", "id-1"}, `
id:                    id-1
kind:                  report.build
queue:                 batch
state:                 succeeded
priority:              -10
attempt:               1
failures:              0
max_attempts:          3
on_exhausted:          dead_lettered
rev:                   4
run_at:                2026-01-02T03:04:05Z
created_at:            2026-01-02T03:04:05Z
updated_at:            2026-01-02T03:05:07Z
started_at:            2026-01-02T03:05:05Z
attempt_started_at:    2026-01-02T03:05:05Z
finished_at:           2026-01-02T03:05:07Z
cancel_grace:          30s
usage:                 runtime 2000ms
lease_ended_by:        owner
last_owner:            w1
last_lease_id:         id-4
last_lease_expires_at: 2026-01-02T04:05:05Z
lease_state:           completed
result:                {"pages":3}
provenance:            succeeded after 1 attempts, 4 events, sha256:77cfe6e04689b043c6e169ad067435c1bfb843a7efc38da2dc68db05ab336c04
`},
		{"verify", []string{"verify"}, `
verified 3 jobs, 6 events: 0 findings
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := stintEnv(t, cli.Env{Clock: fixedClock()}, append([]string{"--db", db}, tt.args...)...).ok(t).stdout
			if want := tt.want[1:]; got != want {
				t.Errorf("stint %v printed:\n%s\nwant:\n%s", tt.args, got, want)
			}
		})
	}
}
