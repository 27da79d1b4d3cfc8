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

// CheckedRunColumns are the columns of the runs table that Verify derives
// from the run's events (lifecycle.VerifyRun): every column a run event sets,
// and timeout_at, which is the creation event's time plus the run's timeout.
// Both backends name them alike. Verify must find a run whose row disagrees
// with its events in any one of them.
var CheckedRunColumns = []string{
	"state", "rev", "reason_code", "reason", "rerun_of", "created_at", "started_at", "finished_at",
	"reported_at", "updated_at", "timeout_at",
}

// RunCorrupter changes one column of one run's row behind the store's back,
// the way a Corrupter changes a job's: a set time moves by an hour, a text
// gets a suffix, a number grows by one, state becomes another state. The
// test calls it only for a column that the run's state makes meaningful.
type RunCorrupter func(ctx context.Context, runID, column string) error

// RunCorruption runs the corruption suite for runs: for every column of
// CheckedRunColumns, on a fresh store, build a run in which the column is
// set, and an identical twin, change the column with corrupt, and expect
// Verify to report that run alone, naming the column. open returns a fresh
// store and the corrupter for its database.
func RunCorruption(t *testing.T, open func(t *testing.T) (store.Store, RunCorrupter)) {
	t.Helper()
	for _, col := range CheckedRunColumns {
		if !slices.ContainsFunc(runCorruptCases, func(c runCorruptCase) bool { return c.column == col }) {
			t.Errorf("storetest: no corruption case for checked run column %s", col)
		}
	}
	for _, c := range runCorruptCases {
		t.Run(c.column+"/"+c.run, func(t *testing.T) {
			t.Parallel()
			var corrupt RunCorrupter
			h := &runHarness{harness: newHarness(t, func(t *testing.T) store.Store {
				s, cr := open(t)
				corrupt = cr
				return s
			})}
			build := runBuilds[c.run]
			if c.run == "reported" {
				h.hook(store.Webhook{EventTypes: []string{string(lifecycle.RunEventSucceeded)}})
			}
			victim, twin := build(h), build(h)
			if found := h.findings(); len(found) != 0 {
				t.Fatalf("verify before any corruption: %v", found)
			}
			before := h.getRun(victim)
			if err := corrupt(h.ctx, victim, c.column); err != nil {
				t.Fatalf("corrupt %s of run %s: %v", c.column, victim, err)
			}
			if after := h.getRun(victim); asJSON(after) == asJSON(before) {
				t.Fatalf("the corrupter changed nothing that RunGet reads: %s of run %s is as it was", c.column, victim)
			}
			found := h.findings()
			if len(found) != 1 || found[0].RunID != victim || found[0].JobID != "" {
				t.Fatalf("after corrupting %s of run %s (twin %s left alone), verify found %v; want exactly one finding, for run %s",
					c.column, victim, twin, found, victim)
			}
			if !strings.Contains(found[0].Problem, c.column) {
				t.Errorf("the finding for corrupted %s does not name the column: %q", c.column, found[0].Problem)
			}
			t.Logf("%s: %s", c.column, found[0].Problem)
		})
	}
}

// runCorruptCase is a checked run column and the run (a key of runBuilds)
// in which it is set.
type runCorruptCase struct {
	column string
	run    string
}

var runCorruptCases = []runCorruptCase{
	{"state", "queued"},
	{"state", "running"},
	{"rev", "running"},
	{"reason_code", "failed"},
	{"reason", "failed"},
	{"reason", "reported"}, // the report keeps the reason of the run's end
	{"rerun_of", "rerun"},
	{"created_at", "queued"},
	{"started_at", "running"},
	{"finished_at", "failed"},
	{"reported_at", "reported"},
	{"updated_at", "running"},
	{"timeout_at", "timeout"},
}

// runBuilds make a run of one job, "a", in a given shape through legal
// store calls only, and return its id.
var runBuilds = map[string]func(h *runHarness) string{
	"queued": func(h *runHarness) string {
		return h.fresh(lifecycle.RunSpec{})
	},
	"running": func(h *runHarness) string {
		id := h.fresh(lifecycle.RunSpec{})
		h.run("a")
		return id
	},
	"failed": func(h *runHarness) string {
		id := h.fresh(lifecycle.RunSpec{})
		h.failJob("a")
		h.states(lifecycle.RunFailed, nil)
		return id
	},
	"reported": func(h *runHarness) string { // the caller adds a webhook for run_succeeded first
		id := h.fresh(lifecycle.RunSpec{})
		h.succeed("a")
		d := h.claimOutbox(1)
		if len(d) != 1 || d[0].Message.AggregateID != id {
			h.t.Fatalf("claimed %+v, want the final status of run %s", d, id)
		}
		h.delivered(d[0])
		if r := h.refresh().Run; r.ReportedAt == nil {
			h.t.Fatalf("run %s not reported after delivery: %+v", id, r)
		}
		return id
	},
	"rerun": func(h *runHarness) string {
		h.fresh(lifecycle.RunSpec{})
		h.failJob("a")
		v, err := h.s.RunRerun(h.ctx, &store.RunRerunParams{RunID: h.view.Run.ID, ActorID: "operator", Now: h.tick()})
		h.ok("rerun", err)
		return v.Run.ID
	},
	"timeout": func(h *runHarness) string {
		return h.fresh(lifecycle.RunSpec{Timeout: time.Hour})
	},
}

// fresh creates a run of one job, "a", and makes it the run under test.
func (h *runHarness) fresh(spec lifecycle.RunSpec) string {
	h.t.Helper()
	h.lease = nil
	return h.create(spec, rj{name: "a"}).Run.ID
}

// getRun reads a run's row, failing the test if it cannot.
func (h *runHarness) getRun(id string) lifecycle.Run {
	h.t.Helper()
	v, err := h.s.RunGet(h.ctx, id)
	h.ok("run get", err)
	return v.Run
}
