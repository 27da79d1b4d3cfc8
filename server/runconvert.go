package server

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Run conversions: enums map by name, as the job's do (convert.go).

func runStateToProto(s lifecycle.RunState) stintv1.RunState {
	return stintv1.RunState(enumOf(stintv1.RunState(0).Descriptor(), "RUN_STATE_", string(s)))
}

func runStateFromProto(s stintv1.RunState) (lifecycle.RunState, bool) {
	n, ok := nameOf(s.Descriptor(), "RUN_STATE_", protoreflect.EnumNumber(s))
	return lifecycle.RunState(n), ok
}

func onFailureToProto(f lifecycle.FailurePolicy) stintv1.OnFailure {
	return stintv1.OnFailure(enumOf(stintv1.OnFailure(0).Descriptor(), "ON_FAILURE_", string(f)))
}

// onFailureFromProto maps UNSPECIFIED to "" (the store's default, cancel)
// and refuses a number the schema does not define.
func onFailureFromProto(f stintv1.OnFailure) (lifecycle.FailurePolicy, error) {
	if f == stintv1.OnFailure_ON_FAILURE_UNSPECIFIED {
		return "", nil
	}
	n, ok := nameOf(f.Descriptor(), "ON_FAILURE_", protoreflect.EnumNumber(f))
	if !ok {
		return "", invalid("on_failure %d: expected ON_FAILURE_CANCEL or ON_FAILURE_CONTINUE", f)
	}
	return lifecycle.FailurePolicy(n), nil
}

func runEventTypeToProto(t lifecycle.RunEventType) stintv1.RunEventType {
	return stintv1.RunEventType(enumOf(stintv1.RunEventType(0).Descriptor(), "RUN_EVENT_TYPE_", string(t)))
}

func runToProto(r lifecycle.Run) *stintv1.Run {
	return &stintv1.Run{
		Id: r.ID, Tenant: r.Tenant, Name: r.Name, State: runStateToProto(r.State), Rev: r.Rev,
		OnFailure: onFailureToProto(r.OnFailure), Timeout: dur(r.Timeout.D()), TimeoutAt: tsPtr(r.TimeoutAt),
		RerunOf: r.RerunOf, ReasonCode: r.ReasonCode, Reason: r.Reason, CreatedAt: ts(r.CreatedAt),
		StartedAt: tsPtr(r.StartedAt), FinishedAt: tsPtr(r.FinishedAt), ReportedAt: tsPtr(r.ReportedAt),
		UpdatedAt: ts(r.UpdatedAt),
	}
}

func runViewToProto(v store.RunView) *stintv1.RunView {
	out := &stintv1.RunView{Run: runToProto(v.Run), Jobs: make([]*stintv1.RunJob, len(v.Jobs))}
	for i, j := range v.Jobs {
		out.Jobs[i] = &stintv1.RunJob{Name: j.Name, JobId: j.JobID, State: stateToProto(j.State), DependsOn: j.DependsOn,
			AllowFailure: j.AllowFailure, NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
	}
	return out
}

func runEventToProto(e lifecycle.RunEvent) *stintv1.RunEvent {
	return &stintv1.RunEvent{
		Id: e.ID, RunId: e.RunID, Rev: e.Rev, Type: runEventTypeToProto(e.Type), Op: string(e.Op),
		FromState: runStateToProto(e.FromState), ToState: runStateToProto(e.ToState), At: ts(e.At),
		Actor: actorToProto(e.Actor), ActorId: e.ActorID, JobId: e.JobID, ReasonCode: e.ReasonCode,
		Reason: e.Reason, Details: jsonToValue(e.Details),
	}
}

// runJobsFromProto validates the jobs of a run (or of a dynamic plan) for
// tenant t. The graph itself (names unique, depends_on inside the run, no
// cycle) is the store's to check, before it writes anything.
func runJobsFromProto(t tenant, jobs []*stintv1.RunJobSpec, limit int) ([]store.RunJobSpec, error) {
	if len(jobs) == 0 || len(jobs) > MaxBatch {
		return nil, invalid("a run takes 1 to %d jobs, not %d", MaxBatch, len(jobs))
	}
	out := make([]store.RunJobSpec, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return nil, invalid("job %d of the run is empty", i)
		}
		if err := checkName(fmtField(i, "name"), j.Name); err != nil {
			return nil, err
		}
		if len(j.DependsOn) > MaxBatch {
			return nil, invalid("job %q of the run: depends_on has %d names: the limit is %d", j.Name, len(j.DependsOn), MaxBatch)
		}
		for _, d := range j.DependsOn {
			if err := checkName(fmtField(i, "depends_on"), d); err != nil {
				return nil, err
			}
		}
		spec, err := specFromProto(t, j.Job, limit)
		if err != nil {
			return nil, invalid("job %q of the run: %s", j.Name, messageOf(err))
		}
		out[i] = store.RunJobSpec{Name: j.Name, Spec: spec, DependsOn: j.DependsOn,
			AllowFailure: j.AllowFailure, NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
	}
	return out, nil
}

func fmtField(i int, field string) string {
	return "jobs[" + strconv.Itoa(i) + "]." + field
}
