package lifecycle

import (
	"fmt"
	"slices"
	"time"
)

// RunEdge is one row of the run transition table.
type RunEdge struct {
	Op     RunOp
	Actors []Actor
	From   RunState // "" is ∅, before creation
	To     RunState
	Event  RunEventType
}

// RunTable is the complete run transition table: nothing else is allowed.
// [ApplyRun] decides with it and [ReplayRun] checks events against it.
var RunTable = buildRunTable()

func buildRunTable() []RunEdge {
	var t []RunEdge
	add := func(op RunOp, actors []Actor, froms []RunState, to RunState, ev RunEventType) {
		for _, f := range froms {
			t = append(t, RunEdge{Op: op, Actors: actors, From: f, To: to, Event: ev})
		}
	}
	live := []RunState{RunQueued, RunRunning}
	add(RunOpCreate, client, []RunState{""}, RunQueued, RunEventCreated)
	add(RunOpStart, system, []RunState{RunQueued}, RunRunning, RunEventStarted)
	add(RunOpExtend, owner, []RunState{RunRunning}, RunRunning, RunEventJobsAdded)
	add(RunOpSucceed, system, live, RunSucceeded, RunEventSucceeded)
	add(RunOpFail, system, live, RunFailed, RunEventFailed)
	add(RunOpCancel, client, live, RunCancelRequested, RunEventCancelRequested)
	add(RunOpFinish, system, []RunState{RunCancelRequested}, RunCancelled, RunEventCancelled)
	add(RunOpTimeOut, system, []RunState{RunQueued, RunRunning, RunCancelRequested}, RunTimedOut, RunEventTimedOut)
	for _, s := range []RunState{RunSucceeded, RunFailed, RunCancelled, RunTimedOut} {
		add(RunOpReport, system, []RunState{s}, s, RunEventReported)
	}
	return t
}

func findRunEdge(op RunOp, actor Actor, from RunState) (RunEdge, bool) {
	for _, e := range RunTable {
		if e.Op == op && e.From == from && slices.Contains(e.Actors, actor) {
			return e, true
		}
	}
	return RunEdge{}, false
}

// RunSpec is what a client asks for when it creates a run.
type RunSpec struct {
	ID        string
	Tenant    string
	Name      string
	OnFailure FailurePolicy // "" means FailCancel
	Timeout   time.Duration // 0 means none
	RerunOf   string
	ActorID   string
}

// RunCommand asks for one operation on one run.
type RunCommand struct {
	Op         RunOp
	Actor      Actor
	ActorID    string
	JobID      string // the job whose transition caused the command
	ReasonCode string
	Reason     string
	Details    []byte // JSON, for extend: the names added
}

// RunStep is the outcome of an accepted run command; Event is nil for an
// idempotent no-op.
type RunStep struct {
	Run   Run
	Event *RunEvent
}

// NewRun validates spec and returns the queued run and its creation event.
func NewRun(spec RunSpec, now time.Time) (Run, RunEvent, error) {
	if spec.OnFailure == "" {
		spec.OnFailure = FailCancel
	}
	switch {
	case spec.ID == "":
		return Run{}, RunEvent{}, Validationf("a run needs an id")
	case spec.OnFailure != FailCancel && spec.OnFailure != FailContinue:
		return Run{}, RunEvent{}, Validationf("on_failure %q: expected %q or %q", spec.OnFailure, FailCancel, FailContinue)
	case spec.Timeout < 0:
		return Run{}, RunEvent{}, Validationf("run timeout %s must not be negative", spec.Timeout)
	}
	if err := CheckTexts("run id", spec.ID, "tenant", spec.Tenant, "run name", spec.Name, "rerun_of", spec.RerunOf, "actor id", spec.ActorID); err != nil {
		return Run{}, RunEvent{}, Validationf("%s", inputProblem(err))
	}
	r := Run{
		ID: spec.ID, Tenant: spec.Tenant, Name: spec.Name, State: RunQueued, Rev: 1,
		OnFailure: spec.OnFailure, Timeout: Duration(spec.Timeout), RerunOf: spec.RerunOf,
		CreatedAt: now, UpdatedAt: now,
	}
	if spec.Timeout > 0 {
		t := later(now, spec.Timeout)
		r.TimeoutAt = &t
	}
	ev := RunEvent{RunID: r.ID, Rev: 1, Type: RunEventCreated, Op: RunOpCreate, ToState: RunQueued, At: now,
		Actor: ActorClient, ActorID: spec.ActorID, Reason: spec.RerunOf}
	return r, ev, nil
}

// ApplyRun applies cmd to run at now: the run after it and the one event that
// records it, or a typed error and no change. Asking again for a cancel that
// is under way, or for a report already made, is a no-op.
func ApplyRun(run Run, cmd RunCommand, now time.Time) (RunStep, error) {
	rejectRun := func(kind error, format string, args ...any) error {
		return &Error{Kind: kind, Msg: fmt.Sprintf("run %s (state %s): ", run.ID, run.State) + fmt.Sprintf(format, args...)}
	}
	switch {
	case cmd.Op == RunOpCancel && (run.State == RunCancelRequested || run.State == RunCancelled):
		return RunStep{Run: run}, nil
	case cmd.Op == RunOpReport && run.ReportedAt != nil:
		return RunStep{Run: run}, nil
	case cmd.Op == RunOpCreate:
		return RunStep{}, rejectRun(ErrValidation, "create a run with NewRun")
	}
	edge, ok := findRunEdge(cmd.Op, cmd.Actor, run.State)
	if !ok {
		return RunStep{}, rejectRun(ErrInvalidTransition, "no %s by %s from %s", cmd.Op, cmd.Actor, run.State)
	}
	next := run
	next.State, next.Rev, next.UpdatedAt = edge.To, run.Rev+1, now
	if cmd.ReasonCode != "" || cmd.Reason != "" {
		next.ReasonCode, next.Reason = cmd.ReasonCode, cmd.Reason
	}
	switch {
	case cmd.Op == RunOpReport:
		next.ReasonCode, next.Reason = run.ReasonCode, run.Reason
		next.ReportedAt = &now
	case cmd.Op == RunOpStart:
		next.StartedAt = &now
	case edge.To.Terminal():
		next.FinishedAt = &now
	}
	ev := RunEvent{RunID: run.ID, Rev: next.Rev, Type: edge.Event, Op: cmd.Op, FromState: run.State, ToState: next.State,
		At: now, Actor: cmd.Actor, ActorID: cmd.ActorID, JobID: cmd.JobID, ReasonCode: cmd.ReasonCode, Reason: cmd.Reason, Details: cmd.Details}
	return RunStep{Run: next, Event: &ev}, nil
}
