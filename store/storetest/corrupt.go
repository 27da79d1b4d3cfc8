package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// CheckedColumns are the columns of the jobs table that a claim, a filter, a
// maintenance query or a unique index reads. Both backends name them alike.
// Verify must find a job whose row disagrees with its events in any one of
// them.
var CheckedColumns = []string{
	"state", "attempt", "failures", "rev", "queue", "kind", "tenant", "topic", "priority", "dedupe_key",
	"created_at", "run_at", "lease_id", "owner", "lease_expires_at", "timeout_at", "cancel_deadline",
	"deadline", "finished_at", "result_digest",
}

// Corrupter changes one column of one job's row behind the store's back, to
// a value of the column's type that differs from the one stored (a NULL
// column gets a value; a set time moves by an hour; a text gets a suffix; a
// number grows by one; state becomes another state). The test calls it only
// for a column that the job's state makes meaningful.
type Corrupter func(ctx context.Context, jobID, column string) error

// Corruption runs the corruption suite: for every column of CheckedColumns,
// on a fresh store, build a job in a state where the column matters, change
// the column with corrupt, and expect Verify to report that job (and only
// that job). open returns a fresh store and the corrupter for its database.
func Corruption(t *testing.T, open func(t *testing.T) (store.Store, Corrupter)) {
	t.Helper()
	testCorruption(t, open)
}

// corruptCase is a job in which one column matters: the state it is built
// in and the spec options that give the column a meaning.
type corruptCase struct {
	column string
	state  lifecycle.State
	// opts returns the spec options of one job; it is called once per job,
	// so a dedupe key can differ between the corrupted job and its twin.
	opts func(h *harness) []specOpt
}

func none(*harness) []specOpt { return nil }

// corruptCases name, for each checked column, the states in which a store
// reads it: the claim reads state, queue, kind, priority and created_at of
// a queued job; the maintenance queries read run_at, lease_expires_at,
// cancel_deadline, timeout_at and deadline; the dedupe index reads tenant,
// dedupe_key and state; fencing reads lease_id and owner; the retry budget
// reads attempt and failures; provenance reads finished_at and result_digest.
var corruptCases = []corruptCase{
	{"state", lifecycle.Running, none},
	{"state", lifecycle.Queued, none},
	{"attempt", lifecycle.Running, none},
	{"failures", lifecycle.Retrying, none},
	{"rev", lifecycle.Running, none},
	{"queue", lifecycle.Queued, none},
	{"kind", lifecycle.Queued, none},
	{"tenant", lifecycle.Queued, func(h *harness) []specOpt { return []specOpt{withTenant("acme")} }},
	{"topic", lifecycle.Queued, func(h *harness) []specOpt { return []specOpt{withTopic("job.storetest.corrupt")} }},
	{"priority", lifecycle.Queued, none},
	{"dedupe_key", lifecycle.Queued, func(h *harness) []specOpt { return []specOpt{dedupeKey("acme", h.name("key-"))} }},
	{"created_at", lifecycle.Queued, none},
	{"run_at", lifecycle.Scheduled, none},
	{"run_at", lifecycle.Retrying, none},
	{"lease_id", lifecycle.Running, none},
	{"owner", lifecycle.Running, none},
	{"lease_expires_at", lifecycle.Running, none},
	{"lease_expires_at", lifecycle.Claimed, none},
	{"timeout_at", lifecycle.Running, func(*harness) []specOpt { return []specOpt{timeoutOf(10 * time.Minute)} }},
	{"cancel_deadline", lifecycle.CancelRequested, none},
	{"deadline", lifecycle.Queued, func(*harness) []specOpt { return []specOpt{deadlineIn(24 * time.Hour)} }},
	{"finished_at", lifecycle.Succeeded, none},
	{"finished_at", lifecycle.Failed, none},
	{"result_digest", lifecycle.Succeeded, none},
}

func withTenant(tenant string) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.Tenant = tenant }
}

func withTopic(topic string) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.Topic = topic }
}

// testCorruption builds, for each case on a fresh store, the job to corrupt
// and an identical twin, checks that Verify is clean, corrupts one column of
// the job, and expects exactly one finding: that job, naming the column.
func testCorruption(t *testing.T, open func(t *testing.T) (store.Store, Corrupter)) {
	for _, col := range CheckedColumns {
		if !slices.ContainsFunc(corruptCases, func(c corruptCase) bool { return c.column == col }) {
			t.Errorf("storetest: no corruption case for checked column %s", col)
		}
	}
	for _, c := range corruptCases {
		t.Run(c.column+"/"+string(c.state), func(t *testing.T) {
			t.Parallel()
			var corrupt Corrupter
			h := newHarness(t, func(t *testing.T) store.Store {
				s, cr := open(t)
				corrupt = cr
				return s
			})
			victim := h.build(c.state, c.opts(h)...)
			twin := h.build(c.state, c.opts(h)...)
			if found := h.findings(); len(found) != 0 {
				t.Fatalf("verify before any corruption: %v", found)
			}
			before := h.get(victim.ID)
			if err := corrupt(h.ctx, victim.ID, c.column); err != nil {
				t.Fatalf("corrupt %s of job %s: %v", c.column, victim.ID, err)
			}
			if after, err := h.s.JobGet(h.ctx, victim.ID); err == nil && sameJob(before, after) {
				t.Fatalf("the corrupter changed nothing that JobGet reads: %s of job %s is as it was", c.column, victim.ID)
			}
			found := h.findings()
			if len(found) != 1 || found[0].JobID != victim.ID {
				t.Fatalf("after corrupting %s of job %s (twin %s left alone), verify found %v; want exactly one finding, for job %s",
					c.column, victim.ID, twin.ID, found, victim.ID)
			}
			if !strings.Contains(found[0].Problem, c.column) {
				t.Errorf("the finding for corrupted %s does not name the column: %q", c.column, found[0].Problem)
			}
			t.Logf("%s: %s", c.column, found[0].Problem)
		})
	}
}

// findings runs Verify and returns what it found, failing the test on an error.
func (h *harness) findings() []store.Finding {
	h.t.Helper()
	rep, err := h.s.Verify(h.ctx, nil)
	if err != nil {
		h.t.Fatalf("verify: %v", err)
	}
	return rep.Findings
}
