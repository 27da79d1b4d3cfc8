package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testRuns checks every run rule of DESIGN.md section 2 on a real store.
func testRuns(t *testing.T, newStore func(*testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*runHarness)
	}{
		{"RefusedWithNothingWritten", runRefused},
		{"AllSucceed", runAllSucceed},
		{"RequiredFailureCancelsDependents", runRequiredFailure},
		{"ContinuePolicyKeepsUnrelatedJobs", runContinuePolicy},
		{"AllowFailureLeavesRunSucceeding", runAllowFailure},
		{"CancelNeverAcknowledgedEndsAtDeadline", runCancelForced},
		{"CancelAcknowledged", runCancelAcked},
		{"Timeout", runTimeout},
		{"RerunFailedOnly", runRerunFailedOnly},
		{"DynamicChildren", runDynamic},
		{"PlannerFailure", runPlanFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rh := &runHarness{harness: newHarness(t, newStore)}
			tc.fn(rh)
			if f := rh.findings(); len(f) > 0 {
				t.Fatalf("verify found %v", f)
			}
		})
	}
}

// runHarness drives runs whose jobs each sit alone in a queue of their own,
// so a test claims exactly the job it names.
type runHarness struct {
	*harness
	view  store.RunView
	lease map[string]string
}

// rj is a job of a run under test: name, dependencies, options.
type rj struct {
	name  string
	deps  []string
	allow bool
	plan  bool
}

func (h *runHarness) create(spec lifecycle.RunSpec, jobs ...rj) store.RunView {
	h.t.Helper()
	v, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{Run: spec, Jobs: h.specs(jobs), Now: h.tick()})
	h.ok("run create", err)
	h.view = v
	return v
}

func (h *runHarness) specs(jobs []rj) []store.RunJobSpec {
	out := make([]store.RunJobSpec, len(jobs))
	for i, j := range jobs {
		s := h.spec(h.now)
		s.MaxAttempts = 1
		s.OnExhausted = lifecycle.Failed
		out[i] = store.RunJobSpec{Name: j.name, Spec: s, DependsOn: j.deps, AllowFailure: j.allow, Planner: j.plan}
	}
	return out
}

// refresh reads the run under test again.
func (h *runHarness) refresh() store.RunView {
	h.t.Helper()
	v, err := h.s.RunGet(h.ctx, h.view.Run.ID)
	h.ok("run get", err)
	h.view = v
	return v
}

func (h *runHarness) job(name string) store.RunJob {
	h.t.Helper()
	for _, j := range h.refresh().Jobs {
		if j.Name == name {
			return j
		}
	}
	h.t.Fatalf("run %s has no job %q", h.view.Run.ID, name)
	return store.RunJob{}
}

// fx returns the fixture of a run's job, with the lease its claim took.
func (h *runHarness) fx(name string) fixture {
	h.t.Helper()
	j := h.job(name)
	return fixture{ID: j.JobID, Queue: h.get(j.JobID).Queue, Lease: h.lease[name]}
}

// run claims and starts a job of the run.
func (h *runHarness) run(name string) {
	h.t.Helper()
	f := h.fx(name)
	h.claim(&f)
	h.start(f)
	if h.lease == nil {
		h.lease = map[string]string{}
	}
	h.lease[name] = f.Lease
}

func (h *runHarness) succeed(name string) {
	h.t.Helper()
	h.run(name)
	h.complete(h.fx(name))
}

func (h *runHarness) failJob(name string) {
	h.t.Helper()
	h.run(name)
	_, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: h.own(h.fx(name)),
		Error: lifecycle.JobError{Code: "test_failure", Message: "3 tests failed", Class: lifecycle.ClassPermanent}})
	h.ok("fail", err)
}

// states checks the run's state and its jobs' states (name → state).
func (h *runHarness) states(run lifecycle.RunState, jobs map[string]lifecycle.State) {
	h.t.Helper()
	v := h.refresh()
	if v.Run.State != run {
		h.t.Fatalf("run is %s (%s %s), want %s", v.Run.State, v.Run.ReasonCode, v.Run.Reason, run)
	}
	for _, j := range v.Jobs {
		if want, ok := jobs[j.Name]; ok && j.State != want {
			h.t.Fatalf("job %q is %s, want %s", j.Name, j.State, want)
		}
	}
}

func (h *runHarness) reasonCode(name, want string) {
	h.t.Helper()
	if got := h.get(h.job(name).JobID).ReasonCode; got != want {
		h.t.Fatalf("job %q reason code %q, want %q", name, got, want)
	}
}

// ci is the CI-shaped run: build → test and lint (allowed to fail) → deploy.
var ci = []rj{{name: "build"}, {name: "test", deps: []string{"build"}}, {name: "lint", deps: []string{"build"}, allow: true},
	{name: "deploy", deps: []string{"test", "lint"}}}

const (
	S  = lifecycle.Succeeded
	F  = lifecycle.Failed
	C  = lifecycle.Cancelled
	B  = lifecycle.Blocked
	Q  = lifecycle.Queued
	R  = lifecycle.Running
	CR = lifecycle.CancelRequested
)

func runRefused(h *runHarness) {
	for _, tc := range []struct {
		name string
		jobs []rj
		want string
	}{
		{"outside", []rj{{name: "a"}, {name: "b", deps: []string{"zz"}}}, `not a job of this run`},
		{"cycle", []rj{{name: "a", deps: []string{"b"}}, {name: "b", deps: []string{"a"}}}, "cycle"},
		{"duplicate", []rj{{name: "a"}, {name: "a"}}, "used twice"},
	} {
		_, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{Jobs: h.specs(tc.jobs), Now: h.tick()})
		if !errors.Is(err, lifecycle.ErrValidation) || !strings.Contains(err.Error(), tc.want) {
			h.t.Fatalf("%s: err %v, want a validation error with %q", tc.name, err, tc.want)
		}
	}
	bad := h.specs([]rj{{name: "a"}, {name: "b", deps: []string{"a"}}})
	bad[1].Spec.Kind = ""
	if _, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{Jobs: bad, Now: h.tick()}); !errors.Is(err, lifecycle.ErrValidation) {
		h.t.Fatalf("a bad job spec: %v", err)
	}
	runs, err := h.s.RunList(h.ctx, &store.RunListParams{})
	h.ok("run list", err)
	jobs, err := h.s.JobList(h.ctx, &store.JobListParams{})
	h.ok("job list", err)
	if len(runs)+len(jobs) != 0 {
		h.t.Fatalf("refused runs wrote %d runs and %d jobs", len(runs), len(jobs))
	}
}

func runAllSucceed(h *runHarness) {
	h.create(lifecycle.RunSpec{}, ci...)
	h.states(lifecycle.RunQueued, map[string]lifecycle.State{"build": Q, "test": B, "lint": B, "deploy": B})
	h.run("build")
	h.states(lifecycle.RunRunning, nil)
	h.complete(h.fx("build"))
	h.states(lifecycle.RunRunning, map[string]lifecycle.State{"test": Q, "lint": Q, "deploy": B})
	h.succeed("test")
	h.succeed("lint")
	h.states(lifecycle.RunRunning, map[string]lifecycle.State{"deploy": Q})
	h.succeed("deploy")
	h.states(lifecycle.RunSucceeded, nil)
	evs, err := h.s.RunEvents(h.ctx, h.view.Run.ID)
	h.ok("run events", err)
	var types []lifecycle.RunEventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []lifecycle.RunEventType{lifecycle.RunEventCreated, lifecycle.RunEventStarted, lifecycle.RunEventSucceeded}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		h.t.Fatalf("run events %v, want %v", types, want)
	}
}

func runRequiredFailure(h *runHarness) {
	h.create(lifecycle.RunSpec{}, append([]rj{{name: "docs"}}, ci...)...)
	h.run("docs")
	h.failJob("build")
	// One transaction: build failed, test/lint/deploy cancelled upstream, docs
	// asked to stop (on_failure cancel), the run failed.
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"build": F, "test": C, "lint": C, "deploy": C, "docs": CR})
	h.reasonCode("test", lifecycle.ReasonUpstreamFailed)
	h.reasonCode("deploy", lifecycle.ReasonUpstreamFailed)
	if r := h.view.Run; r.ReasonCode != lifecycle.ReasonJobFailed || !strings.Contains(r.Reason, "build") {
		h.t.Fatalf("run reason %s %q", r.ReasonCode, r.Reason)
	}
	_, err := h.s.JobAckCancel(h.ctx, ptrTo(h.own(h.fx("docs"))))
	h.ok("ack cancel", err)
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"docs": C})
}

func ptrTo[T any](v T) *T { return &v }

func runContinuePolicy(h *runHarness) {
	h.create(lifecycle.RunSpec{OnFailure: lifecycle.FailContinue}, rj{name: "a"}, rj{name: "b", deps: []string{"a"}}, rj{name: "other"})
	h.failJob("a")
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"b": C, "other": Q})
	h.succeed("other")
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"other": S})
}

func runAllowFailure(h *runHarness) {
	h.create(lifecycle.RunSpec{}, ci...)
	h.succeed("build")
	h.succeed("test")
	h.failJob("lint")
	h.states(lifecycle.RunRunning, map[string]lifecycle.State{"lint": F, "deploy": Q})
	h.succeed("deploy")
	h.states(lifecycle.RunSucceeded, nil)
}

func runCancelForced(h *runHarness) {
	h.create(lifecycle.RunSpec{}, ci...)
	h.run("build")
	v, err := h.s.RunCancel(h.ctx, &store.RunCancelParams{RunID: h.view.Run.ID, ActorID: "operator", Now: h.tick()})
	h.ok("run cancel", err)
	if v.Run.State != lifecycle.RunCancelRequested {
		h.t.Fatalf("run is %s after cancel", v.Run.State)
	}
	h.states(lifecycle.RunCancelRequested, map[string]lifecycle.State{"build": CR, "test": C, "lint": C, "deploy": C})
	h.advance(lifecycle.DefaultCancelGrace + time.Minute)
	n, err := h.s.JobForceCancelDue(h.ctx, &store.MaintainParams{Now: h.tick()})
	h.ok("force cancel", err)
	if n != 1 {
		h.t.Fatalf("force cancelled %d jobs, want 1", n)
	}
	h.states(lifecycle.RunCancelled, map[string]lifecycle.State{"build": C})
}

func runCancelAcked(h *runHarness) {
	h.create(lifecycle.RunSpec{}, rj{name: "a"}, rj{name: "b"})
	h.run("a")
	_, err := h.s.RunCancel(h.ctx, &store.RunCancelParams{RunID: h.view.Run.ID, Now: h.tick()})
	h.ok("run cancel", err)
	_, err = h.s.RunCancel(h.ctx, &store.RunCancelParams{RunID: h.view.Run.ID, Now: h.tick()})
	h.ok("run cancel again (a no-op)", err)
	h.states(lifecycle.RunCancelRequested, map[string]lifecycle.State{"a": CR, "b": C})
	_, err = h.s.JobAckCancel(h.ctx, ptrTo(h.own(h.fx("a"))))
	h.ok("ack cancel", err)
	h.states(lifecycle.RunCancelled, nil)
	h.reasonCode("b", lifecycle.ReasonRunCancelled)
}

func runTimeout(h *runHarness) {
	h.create(lifecycle.RunSpec{Timeout: time.Hour}, rj{name: "a"}, rj{name: "b", deps: []string{"a"}})
	h.run("a")
	n, err := h.s.RunTimeOutDue(h.ctx, &store.MaintainParams{Now: h.tick()})
	h.ok("run timeout", err)
	if n != 0 {
		h.t.Fatalf("timed out %d runs before their time", n)
	}
	h.advance(time.Hour)
	n, err = h.s.RunTimeOutDue(h.ctx, &store.MaintainParams{Now: h.tick()})
	h.ok("run timeout", err)
	if n != 1 {
		h.t.Fatalf("timed out %d runs, want 1", n)
	}
	h.states(lifecycle.RunTimedOut, map[string]lifecycle.State{"a": lifecycle.TimedOut, "b": lifecycle.TimedOut})
}

func runRerunFailedOnly(h *runHarness) {
	old := h.create(lifecycle.RunSpec{}, rj{name: "a"}, rj{name: "b", deps: []string{"a"}}, rj{name: "c", deps: []string{"b"}})
	h.succeed("a")
	h.failJob("b")
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"a": S, "b": F, "c": C})
	v, err := h.s.RunRerun(h.ctx, &store.RunRerunParams{RunID: old.Run.ID, FailedOnly: true, Now: h.tick()})
	h.ok("rerun", err)
	if v.Run.RerunOf != old.Run.ID || v.Run.ID == old.Run.ID || len(v.Jobs) != 2 {
		h.t.Fatalf("rerun: %+v", v)
	}
	h.view = v
	h.states(lifecycle.RunQueued, map[string]lifecycle.State{"b": Q, "c": B})
	h.succeed("b")
	h.succeed("c")
	h.states(lifecycle.RunSucceeded, nil)
	all, err := h.s.RunRerun(h.ctx, &store.RunRerunParams{RunID: old.Run.ID, Now: h.tick()})
	h.ok("rerun all", err)
	if len(all.Jobs) != 3 {
		h.t.Fatalf("rerun of all jobs has %d", len(all.Jobs))
	}
}

func runDynamic(h *runHarness) {
	h.create(lifecycle.RunSpec{}, rj{name: "plan", plan: true})
	h.run("plan")
	add := h.specs([]rj{{name: "unit"}, {name: "e2e", deps: []string{"unit", "plan"}}})
	_, err := h.s.RunAddJobs(h.ctx, &store.RunAddJobsParams{Owner: store.OwnerParams{JobID: h.fx("plan").ID, LeaseID: "not-the-lease", Now: h.tick()}, Jobs: add})
	if !errors.Is(err, lifecycle.ErrStaleLease) {
		h.t.Fatalf("add jobs with a wrong lease: %v", err)
	}
	_, err = h.s.RunAddJobs(h.ctx, &store.RunAddJobsParams{Owner: h.own(h.fx("plan")), Jobs: h.specs([]rj{{name: "x", deps: []string{"nope"}}})})
	if !errors.Is(err, lifecycle.ErrValidation) {
		h.t.Fatalf("add a job depending outside the run: %v", err)
	}
	_, err = h.s.RunAddJobs(h.ctx, &store.RunAddJobsParams{Owner: h.own(h.fx("plan")), Jobs: add})
	h.ok("add jobs", err)
	// A retry (the reply was lost) gets the run again and adds nothing.
	again, err := h.s.RunAddJobs(h.ctx, &store.RunAddJobsParams{Owner: h.own(h.fx("plan")), Jobs: add})
	h.ok("add the same jobs again", err)
	if len(again.Jobs) != 3 {
		h.t.Fatalf("a retried add left the run with %d jobs, want 3", len(again.Jobs))
	}
	h.states(lifecycle.RunRunning, map[string]lifecycle.State{"unit": Q, "e2e": B})
	if j := h.get(h.job("unit").JobID); j.ParentJobID != h.fx("plan").ID {
		h.t.Fatalf("a dynamic job's parent is %q", j.ParentJobID)
	}
	h.complete(h.fx("plan"))
	h.states(lifecycle.RunRunning, nil)
	h.succeed("unit")
	h.succeed("e2e")
	h.states(lifecycle.RunSucceeded, nil)
}

func runPlanFailed(h *runHarness) {
	h.create(lifecycle.RunSpec{}, rj{name: "plan", plan: true, allow: true}, rj{name: "other"})
	h.failJob("plan")
	h.states(lifecycle.RunFailed, map[string]lifecycle.State{"other": C})
	if h.view.Run.ReasonCode != lifecycle.ReasonPlanFailed {
		h.t.Fatalf("run reason %q, want plan_failed", h.view.Run.ReasonCode)
	}
}
