package lifecycle_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

var runT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// node builds a run node in state st depending on deps.
func node(name string, st lifecycle.State, deps ...string) lifecycle.RunNode {
	return lifecycle.RunNode{Name: name, JobID: "j-" + name, State: st, DependsOn: deps}
}

func newRun(t *testing.T, spec lifecycle.RunSpec) lifecycle.Run {
	t.Helper()
	if spec.ID == "" {
		spec.ID = "r1"
	}
	r, _, err := lifecycle.NewRun(spec, runT0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func withState(r lifecycle.Run, s lifecycle.RunState) lifecycle.Run {
	r.State = s
	return r
}

func TestDecideRun(t *testing.T) {
	t.Parallel()
	running := withState(newRun(t, lifecycle.RunSpec{}), lifecycle.RunRunning)
	cont := withState(newRun(t, lifecycle.RunSpec{OnFailure: lifecycle.FailContinue}), lifecycle.RunRunning)
	allow := func(n lifecycle.RunNode) lifecycle.RunNode { n.AllowFailure = true; return n }
	needs := func(n lifecycle.RunNode) lifecycle.RunNode { n.NeedsSuccess = true; return n }
	planner := func(n lifecycle.RunNode) lifecycle.RunNode { n.Planner = true; return n }
	S, F, B, Q, R := lifecycle.Succeeded, lifecycle.Failed, lifecycle.Blocked, lifecycle.Queued, lifecycle.Running
	tests := []struct {
		name  string
		run   lifecycle.Run
		nodes []lifecycle.RunNode
		want  lifecycle.RunPlan
	}{
		{"dependency succeeded unblocks", running, []lifecycle.RunNode{node("build", S), node("test", B, "build")},
			lifecycle.RunPlan{Unblock: []string{"test"}}},
		{"waits for every dependency", running, []lifecycle.RunNode{node("a", S), node("b", R), node("c", B, "a", "b")},
			lifecycle.RunPlan{}},
		{"required failure cancels dependents transitively and the rest", running,
			[]lifecycle.RunNode{node("build", F), node("test", B, "build"), node("deploy", B, "test"), node("docs", R)},
			lifecycle.RunPlan{Upstream: []string{"test", "deploy"}, Cancel: []string{"docs"}, Run: lifecycle.RunOpFail,
				ReasonCode: lifecycle.ReasonJobFailed, Reason: `required job "build" ended failed`, JobName: "build"}},
		{"continue policy leaves unrelated jobs", cont,
			[]lifecycle.RunNode{node("build", F), node("test", B, "build"), node("docs", R)},
			lifecycle.RunPlan{Upstream: []string{"test"}, Run: lifecycle.RunOpFail,
				ReasonCode: lifecycle.ReasonJobFailed, Reason: `required job "build" ended failed`, JobName: "build"}},
		{"allow-failure failure: dependents still run", running,
			[]lifecycle.RunNode{allow(node("lint", F)), node("deploy", B, "lint")},
			lifecycle.RunPlan{Unblock: []string{"deploy"}}},
		{"needs-success dependent of an allow-failure failure", running,
			[]lifecycle.RunNode{allow(node("lint", F)), allow(needs(node("fix", B, "lint")))},
			lifecycle.RunPlan{Upstream: []string{"fix"}, Run: lifecycle.RunOpSucceed, Reason: "every required job succeeded"}},
		{"allow-failure failure leaves the run succeeding", running,
			[]lifecycle.RunNode{node("build", S), allow(node("lint", F))},
			lifecycle.RunPlan{Run: lifecycle.RunOpSucceed, Reason: "every required job succeeded"}},
		{"planner failure is plan_failed even when allowed to fail", running,
			[]lifecycle.RunNode{node("build", F), allow(planner(node("plan", F)))},
			lifecycle.RunPlan{Run: lifecycle.RunOpFail, ReasonCode: lifecycle.ReasonPlanFailed, Reason: `planner job "plan" ended failed`, JobName: "plan"}},
		{"a claim starts a queued run", newRun(t, lifecycle.RunSpec{}),
			[]lifecycle.RunNode{node("a", lifecycle.Claimed), node("b", Q)}, lifecycle.RunPlan{Run: lifecycle.RunOpStart}},
		{"cancel requested: cancel live, wait for leased", withState(running, lifecycle.RunCancelRequested),
			[]lifecycle.RunNode{node("a", R), node("b", B, "a")}, lifecycle.RunPlan{Cancel: []string{"a", "b"}}},
		{"cancel requested: finished when nothing is leased", withState(running, lifecycle.RunCancelRequested),
			[]lifecycle.RunNode{node("a", lifecycle.Cancelled), node("b", B, "a")},
			lifecycle.RunPlan{Cancel: []string{"b"}, Run: lifecycle.RunOpFinish, ReasonCode: lifecycle.ReasonRunCancelled, Reason: "every job of the run has ended"}},
		{"cancel requested: an acknowledged cancel waits for nothing", withState(running, lifecycle.RunCancelRequested),
			[]lifecycle.RunNode{node("a", lifecycle.CancelRequested)}, lifecycle.RunPlan{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := lifecycle.DecideRun(tc.run, tc.nodes, runT0)
			if !samePlan(got, tc.want) {
				t.Fatalf("plan:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecideRunTimeout(t *testing.T) {
	t.Parallel()
	r := withState(newRun(t, lifecycle.RunSpec{Timeout: time.Minute}), lifecycle.RunRunning)
	nodes := []lifecycle.RunNode{node("a", lifecycle.Running), node("b", lifecycle.Blocked, "a"), node("c", lifecycle.Succeeded)}
	if p := lifecycle.DecideRun(r, nodes, runT0.Add(59*time.Second)); p.Run != "" {
		t.Fatalf("before the timeout: %+v", p)
	}
	p := lifecycle.DecideRun(r, nodes, runT0.Add(time.Minute))
	want := lifecycle.RunPlan{TimeOut: []string{"a", "b"}, Run: lifecycle.RunOpTimeOut, ReasonCode: lifecycle.ReasonRunTimeout, Reason: "the run's timeout passed"}
	if !samePlan(p, want) {
		t.Fatalf("at the timeout: %+v", p)
	}
}

func samePlan(a, b lifecycle.RunPlan) bool {
	return slices.Equal(a.Unblock, b.Unblock) && slices.Equal(a.Upstream, b.Upstream) && slices.Equal(a.Cancel, b.Cancel) &&
		slices.Equal(a.TimeOut, b.TimeOut) && a.Run == b.Run && a.ReasonCode == b.ReasonCode && a.Reason == b.Reason && a.JobName == b.JobName
}

func TestCheckRunGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		nodes   []lifecycle.RunNode
		wantErr string
	}{
		{"diamond", []lifecycle.RunNode{node("a", ""), node("b", "", "a"), node("c", "", "a"), node("d", "", "b", "c")}, ""},
		{"outside the run", []lifecycle.RunNode{node("a", "", "zz")}, `job "a" depends on "zz", which is not a job of this run`},
		{"cycle", []lifecycle.RunNode{node("a", "", "c"), node("b", "", "a"), node("c", "", "b")}, "cycle: a → c → b → a"},
		{"self", []lifecycle.RunNode{node("a", "", "a")}, "cycle: a → a"},
		{"duplicate", []lifecycle.RunNode{node("a", ""), node("a", "")}, `"a" is used twice`},
		{"unnamed", []lifecycle.RunNode{node("", "")}, "needs a name"},
		{"empty", nil, "at least one job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := lifecycle.CheckRunGraph(nil, tc.nodes)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !errors.Is(err, lifecycle.ErrValidation) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want a validation error with %q", err, tc.wantErr)
			}
		})
	}
	if err := lifecycle.CheckRunGraph([]lifecycle.RunNode{node("plan", "")}, []lifecycle.RunNode{node("x", "", "plan")}); err != nil {
		t.Fatalf("a dynamic job may depend on an existing one: %v", err)
	}
}

func TestApplyRun(t *testing.T) {
	t.Parallel()
	r, ev, err := lifecycle.NewRun(lifecycle.RunSpec{ID: "r1", Timeout: time.Hour}, runT0)
	if err != nil {
		t.Fatal(err)
	}
	events := []lifecycle.RunEvent{ev}
	step := func(cmd lifecycle.RunCommand, at time.Time) {
		t.Helper()
		s, err := lifecycle.ApplyRun(r, cmd, at)
		if err != nil {
			t.Fatal(err)
		}
		if s.Event != nil {
			events = append(events, *s.Event)
		}
		r = s.Run
	}
	sys := func(op lifecycle.RunOp) lifecycle.RunCommand {
		return lifecycle.RunCommand{Op: op, Actor: lifecycle.ActorSystem}
	}
	step(sys(lifecycle.RunOpStart), runT0.Add(time.Second))
	step(lifecycle.RunCommand{Op: lifecycle.RunOpCancel, Actor: lifecycle.ActorClient}, runT0.Add(2*time.Second))
	step(lifecycle.RunCommand{Op: lifecycle.RunOpCancel, Actor: lifecycle.ActorClient}, runT0.Add(3*time.Second)) // no-op
	if _, err := lifecycle.ApplyRun(r, sys(lifecycle.RunOpSucceed), runT0); !errors.Is(err, lifecycle.ErrInvalidTransition) {
		t.Fatalf("succeed from cancel_requested: %v", err)
	}
	step(sys(lifecycle.RunOpFinish), runT0.Add(4*time.Second))
	step(sys(lifecycle.RunOpReport), runT0.Add(5*time.Second))
	step(sys(lifecycle.RunOpReport), runT0.Add(6*time.Second)) // no-op
	if r.State != lifecycle.RunCancelled || r.Rev != 5 || r.ReportedAt == nil || !r.ReportedAt.Equal(runT0.Add(5*time.Second)) {
		t.Fatalf("run %+v", r)
	}
	if err := lifecycle.VerifyRun(r, events); err != nil {
		t.Fatal(err)
	}
	bad := r
	bad.State = lifecycle.RunSucceeded
	if err := lifecycle.VerifyRun(bad, events); err == nil || !strings.Contains(err.Error(), "state: row says succeeded, events say cancelled") {
		t.Fatalf("verify of a corrupted state: %v", err)
	}
	if _, err := lifecycle.ReplayRun(append(events[:1:1], events[2:]...)); err == nil {
		t.Fatal("replay accepted a missing event")
	}
	if _, _, err := lifecycle.NewRun(lifecycle.RunSpec{ID: "r", OnFailure: "ignore"}, runT0); !errors.Is(err, lifecycle.ErrValidation) {
		t.Fatalf("bad on_failure: %v", err)
	}
}
