package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// A step that starts a child job writes two rows that must agree: the
// child and the step naming it. JobStepChild writes both in one
// transaction, fenced by the parent's lease, so a worker that may not
// enqueue (a worker token over the API) can start children, and no crash
// between the two leaves a child that no step names.

// JobStepChildParams start a child job as the next step of a running job.
type JobStepChildParams struct {
	OwnerParams
	Seq  int
	Name string
	// Spec is the child's. Its tenant is the parent's, its parent_job_id
	// the parent and its step_index Seq (a spec that names others is
	// refused); its correlation id defaults to the parent's.
	Spec lifecycle.Spec
}

// ChildStep is a child step as JobStepChild recorded it.
type ChildStep struct {
	// Parent is the parent job after the step.
	Parent Job
	// Step is the child step; its output is {"job_id": Child.ID}.
	Step StepRecord
	// Child is the child job as it stands.
	Child Job
}

// ChildRequestID is the enqueue request id of the child started by step
// seq of job parent (the enqueue's actor id is the parent's id): a child
// enqueued before its step was recorded is found again by it.
func ChildRequestID(parent string, seq int) string { return fmt.Sprintf("%s/step/%d", parent, seq) }

func (e *engine) JobStepChild(ctx context.Context, p *JobStepChildParams) (ChildStep, error) {
	sp := JobStepParams{OwnerParams: p.OwnerParams, Seq: p.Seq, Name: p.Name, Kind: StepChild, Status: StepOK}
	if err := sp.check(); err != nil {
		return ChildStep{}, err
	}
	if p.Seq < 1 {
		return ChildStep{}, lifecycle.Validationf("step seq %d: steps are numbered from 1", p.Seq)
	}
	if err := lifecycle.CheckName("step name", p.Name); err != nil {
		return ChildStep{}, err
	}
	var out ChildStep
	repeat := false
	err := e.stepTx(ctx, p.JobID, p.Now, func(tx Tx, st StepTx, b *batch, j lifecycle.Job, now time.Time) error {
		// The step first: a stale lease is refused there, before the child
		// is enqueued, and the transaction writes nothing. A retry by the
		// same lease (a lost reply) gets the step and its child back;
		// anything else is a conflict.
		next, again, err := e.stepNext(ctx, tx, st, b, j, &sp, now, &out.Parent, &out.Step)
		repeat = again // a retried transaction starts over
		if err != nil || again {
			return err
		}
		child, err := e.enqueueChild(ctx, tx, b, j, p, now)
		if err != nil {
			return err
		}
		output, _ := json.Marshal(childRef{JobID: child.ID})
		out.Step = StepRecord{JobID: j.ID, Seq: p.Seq, Name: p.Name, Kind: StepChild, Attempt: next.Attempt, LeaseID: next.LeaseID,
			Status: StepOK, Output: output, RecordedAt: now}
		out.Parent, out.Child = next, child
		return st.StepInsert(ctx, out.Step)
	})
	if err != nil {
		return ChildStep{}, err
	}
	if repeat {
		// Read after the transaction, without a lock on the child's row
		// (a locked child is skipped by a concurrent claim).
		id, err := ChildOf(out.Step)
		if err != nil {
			return ChildStep{}, &lifecycle.Error{Kind: ErrStepConflict, JobID: p.JobID, Op: lifecycle.OpStep,
				Msg: err.Error() + ": replay the job's steps before recording new ones"}
		}
		if out.Child, err = e.JobGet(ctx, id); err != nil {
			return ChildStep{}, err
		}
	}
	return out, nil
}

// childRef is the output of a child step.
type childRef struct {
	JobID string `json:"job_id"`
}

// ChildOf returns the id of the child job a child step's record names.
func ChildOf(r StepRecord) (string, error) {
	var c childRef
	if r.Kind != StepChild || json.Unmarshal(r.Output, &c) != nil || c.JobID == "" {
		return "", fmt.Errorf("step %d %q of job %s names no child job (kind %s, output %.100s)", r.Seq, r.Name, r.JobID, r.Kind, r.Output)
	}
	return c.JobID, nil
}

// enqueueChild enqueues the child of step p.Seq of job j in the parent's
// tenant, with a request id derived from the parent and the step.
func (e *engine) enqueueChild(ctx context.Context, tx Tx, b *batch, j lifecycle.Job, p *JobStepChildParams, now time.Time) (lifecycle.Job, error) {
	spec := p.Spec
	bad := func(field, got, want string) error {
		return &lifecycle.Error{Kind: ErrValidation, JobID: j.ID, Op: lifecycle.OpStep, State: j.State,
			Msg: fmt.Sprintf("the child's %s is %q, but a child step sets it to %q: leave it empty", field, got, want)}
	}
	switch {
	case spec.Tenant != "" && spec.Tenant != j.Tenant:
		return lifecycle.Job{}, bad("tenant", spec.Tenant, j.Tenant)
	case spec.ParentJobID != "" && spec.ParentJobID != j.ID:
		return lifecycle.Job{}, bad("parent_job_id", spec.ParentJobID, j.ID)
	case spec.StepIndex != 0 && spec.StepIndex != p.Seq:
		return lifecycle.Job{}, bad("step_index", fmt.Sprint(spec.StepIndex), fmt.Sprint(p.Seq))
	}
	spec.Tenant, spec.ParentJobID, spec.StepIndex = j.Tenant, j.ID, p.Seq
	if spec.CorrelationID == "" {
		spec.CorrelationID = j.CorrelationID
	}
	res, err := e.enqueue(ctx, tx, b, &JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: j.ID,
		RequestID: ChildRequestID(j.ID, p.Seq), Now: &now})
	if err != nil {
		return lifecycle.Job{}, fmt.Errorf("the child of step %d %q: %w", p.Seq, p.Name, err)
	}
	c := res[0].Job
	if c.ParentJobID != j.ID || c.StepIndex != p.Seq {
		// A dedupe key matched a live job that is not this step's child.
		return lifecycle.Job{}, &lifecycle.Error{Kind: ErrValidation, JobID: j.ID, Op: lifecycle.OpStep, State: j.State,
			Msg: fmt.Sprintf("the child's dedupe key %q names live job %s, which is not this step's child: give the child another dedupe key, or none", spec.DedupeKey, c.ID)}
	}
	return c, nil
}
