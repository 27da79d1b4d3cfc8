package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// stepTx runs fn in a write transaction with the driver's StepTx and the
// job locked.
func (e *engine) stepTx(ctx context.Context, id string, at *time.Time, fn func(tx Tx, st StepTx, b *batch, j lifecycle.Job, now time.Time) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	return e.write(ctx, func(tx Tx, b *batch) error {
		st, ok := tx.(StepTx)
		if !ok {
			return fmt.Errorf("durable steps: %w", ErrUnsupported)
		}
		job, t, err := lockJob(ctx, tx, id, at)
		if err != nil {
			return err
		}
		return fn(tx, st, b, job, notBefore(t, job))
	})
}

func (p *JobStepParams) check() error {
	if p.Status != StepOK && p.Status != StepError {
		return lifecycle.Validationf("step status %q: expected %s or %s", p.Status, StepOK, StepError)
	}
	if p.Kind == "" {
		p.Kind = StepRun
	}
	if err := lifecycle.CheckName("step kind", p.Kind); err != nil {
		return err
	}
	if err := lifecycle.CheckJSON("step output", p.Output); err != nil {
		return lifecycle.Validationf("step %q: the output must be valid JSON: %v", p.Name, err)
	}
	r := StepRecord{Output: p.Output, Error: p.Error}
	if n := r.Size(); n > MaxStepBytes {
		return &lifecycle.Error{Kind: ErrStepTooLarge, JobID: p.JobID, Op: lifecycle.OpStep,
			Msg: fmt.Sprintf("step %d %q recorded %d bytes: the limit is %d; keep large data elsewhere and record a reference to it", p.Seq, p.Name, n, MaxStepBytes)}
	}
	return nil
}

func (e *engine) JobStepRecord(ctx context.Context, p *JobStepParams) (Job, StepRecord, error) {
	if err := p.check(); err != nil {
		return Job{}, StepRecord{}, err
	}
	var out Job
	var rec StepRecord
	err := e.stepTx(ctx, p.JobID, p.Now, func(tx Tx, st StepTx, b *batch, j lifecycle.Job, now time.Time) error {
		next, repeat, err := e.stepNext(ctx, tx, st, b, j, p, now, &out, &rec)
		if err != nil || repeat {
			return err
		}
		rec = StepRecord{JobID: j.ID, Seq: p.Seq, Name: p.Name, Kind: p.Kind, Attempt: next.Attempt, LeaseID: next.LeaseID,
			Status: p.Status, Output: compact(p.Output), Error: p.Error, DurationMS: max(p.DurationMS, 0), RecordedAt: now}
		out = next
		return st.StepInsert(ctx, rec)
	})
	return out, rec, err
}

// stepNext begins recording step p.Seq of j: a step at or past p.Seq is a
// repeat, answered into out and rec by stepRepeat (repeat is true); else
// p.Seq must be the next one, and the step_recorded transition, fenced by
// the lease, is applied and returned for the caller to add its record.
func (e *engine) stepNext(ctx context.Context, tx Tx, st StepTx, b *batch, j lifecycle.Job, p *JobStepParams, now time.Time, out *Job, rec *StepRecord) (next Job, repeat bool, err error) {
	last, ok, err := st.StepLast(ctx, j.ID)
	if err != nil {
		return Job{}, false, err
	}
	if ok && last.Seq >= p.Seq {
		return Job{}, true, e.stepRepeat(ctx, st, j, p, out, rec)
	}
	if want := last.Seq + 1; p.Seq != want {
		return Job{}, false, &lifecycle.Error{Kind: ErrValidation, JobID: j.ID, Op: lifecycle.OpStep, State: j.State,
			Msg: fmt.Sprintf("step seq %d: the job's next step is %d; record steps in order", p.Seq, want)}
	}
	c := owner(p.OwnerParams, lifecycle.OpStep)
	c.StepSeq, c.StepName = p.Seq, p.Name
	if next, err = e.step(ctx, tx, b, j, c, nil, now); err != nil {
		return Job{}, false, err
	}
	if next.Rev == j.Rev {
		// step found an earlier step_recorded event of this request id:
		// its record is at another seq, so this is another request.
		return Job{}, false, &lifecycle.Error{Kind: ErrRequestConflict, JobID: j.ID, Op: lifecycle.OpStep, State: j.State,
			Msg: fmt.Sprintf("request id %q already recorded another step of this job; use a new request id for a new step", p.RequestID)}
	}
	return next, false, nil
}

// stepRepeat answers a step whose seq is already recorded: the same step by
// the same lease is a retry and gets its record back; anything else is a
// conflict (another attempt recorded it, or the handler's order changed).
func (e *engine) stepRepeat(ctx context.Context, st StepTx, j lifecycle.Job, p *JobStepParams, out *Job, rec *StepRecord) error {
	recs, err := st.StepList(ctx, []string{j.ID})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(r StepRecord) bool { return r.Seq == p.Seq })
	if i >= 0 && recs[i].LeaseID == p.LeaseID && recs[i].Name == p.Name {
		*out, *rec = j, recs[i]
		return nil
	}
	name := ""
	if i >= 0 {
		name = recs[i].Name
	}
	return &lifecycle.Error{Kind: ErrStepConflict, JobID: j.ID, Op: lifecycle.OpStep, State: j.State,
		Msg: fmt.Sprintf("step %d is already recorded (as %q, by another lease): replay the job's steps before recording new ones", p.Seq, name)}
}

func compact(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return r
	}
	return b.Bytes()
}

// refuseStep answers JobApply of a step: the lifecycle's refusal if it has
// one, else a pointer to JobStepRecord, since a step_recorded event without
// its record would be a verify finding. It writes nothing.
func (e *engine) refuseStep(ctx context.Context, p *JobApplyParams) (Job, error) {
	var out Job
	err := e.stepTx(ctx, p.JobID, p.Now, func(_ Tx, _ StepTx, _ *batch, j lifecycle.Job, now time.Time) error {
		out = j
		if _, err := lifecycle.Apply(j, p.Command, now); err != nil {
			return err
		}
		return lifecycle.Validationf("a step is written with its record: use JobStepRecord")
	})
	return out, err
}

func (e *engine) JobSuspend(ctx context.Context, p *JobSuspendParams) (Job, error) {
	if p.Until == nil && p.For < 0 {
		return Job{}, lifecycle.Validationf("suspend for %s: give a wake time or a delay of zero or more", p.For)
	}
	var out Job
	err := e.stepTx(ctx, p.JobID, p.Now, func(tx Tx, st StepTx, b *batch, j lifecycle.Job, now time.Time) error {
		if over, err := e.waitOver(ctx, st, j.ID, p.Wait); err != nil || over {
			if over {
				return &lifecycle.Error{Kind: ErrWaitOver, JobID: j.ID, Op: lifecycle.OpSuspend, State: j.State,
					Msg: fmt.Sprintf("%s is already there: read it instead of waiting", p.Wait)}
			}
			return err
		}
		c := owner(p.OwnerParams, lifecycle.OpSuspend)
		at := now.Add(p.For)
		if p.Until != nil {
			at = *p.Until
		}
		c.WakeAt, c.Reason, c.ExecutionMS = &at, p.Wait, p.ExecutionMS
		var err error
		out, err = e.step(ctx, tx, b, j, c, nil, now)
		return err
	})
	return out, err
}

// waitOver reports whether what wait names has already happened: the signal
// was sent, or the child job ended.
func (e *engine) waitOver(ctx context.Context, st StepTx, jobID, wait string) (bool, error) {
	if name, ok := strings.CutPrefix(wait, "signal:"); ok {
		_, found, err := st.SignalGet(ctx, jobID, name)
		return found, err
	}
	if id, ok := strings.CutPrefix(wait, "child:"); ok {
		// Unlocked: the parent's row, locked by this transaction, orders
		// it against the child's end, whose wakeParents locks it too.
		return st.JobEnded(ctx, id)
	}
	return false, nil
}

func (e *engine) JobSignal(ctx context.Context, p *JobSignalParams) (Signal, error) {
	if err := lifecycle.CheckName("signal name", p.Name); err != nil {
		return Signal{}, err
	}
	if len(p.Payload) > MaxStepBytes {
		return Signal{}, &lifecycle.Error{Kind: ErrStepTooLarge, JobID: p.JobID,
			Msg: fmt.Sprintf("the signal's payload is %d bytes: the limit is %d", len(p.Payload), MaxStepBytes)}
	}
	if err := lifecycle.CheckJSON("signal payload", p.Payload); err != nil {
		return Signal{}, lifecycle.Validationf("the signal's payload must be valid JSON: %v", err)
	}
	var out Signal
	err := e.stepTx(ctx, p.JobID, p.Now, func(tx Tx, st StepTx, b *batch, j lifecycle.Job, now time.Time) error {
		if j.State.Terminal() {
			return &lifecycle.Error{Kind: ErrInvalidTransition, JobID: j.ID, State: j.State,
				Msg: "the job is finished: signals go to live jobs"}
		}
		out = Signal{JobID: j.ID, Name: p.Name, Payload: compact(p.Payload), ActorID: p.ActorID, SentAt: now}
		kept, err := st.SignalInsert(ctx, out)
		if err != nil {
			return err
		}
		if !kept {
			prev, _, err := st.SignalGet(ctx, j.ID, p.Name)
			if err != nil {
				return err
			}
			return &lifecycle.Error{Kind: ErrSignalTaken, JobID: j.ID, State: j.State,
				Msg: fmt.Sprintf("signal %q was sent at %s; the first one wins", p.Name, prev.SentAt.Format(time.RFC3339Nano))}
		}
		if wait, ok := lifecycle.Suspended(j); ok && wait == WaitSignal(p.Name) {
			_, err = e.step(ctx, tx, b, j, lifecycle.Command{Op: lifecycle.OpWake, Actor: lifecycle.ActorClient, ActorID: p.ActorID}, nil, now)
		}
		return err
	})
	return out, err
}

// wakeParents wakes the parents suspended awaiting a child that this
// transaction finished, at the time the child finished.
func (e *engine) wakeParents(ctx context.Context, tx Tx, b *batch) error {
	type ended struct {
		child string
		at    time.Time
	}
	parents := map[string]ended{}
	var ids []string
	for _, u := range b.updates {
		j := u.Job
		if j.ParentJobID == "" || !j.State.Terminal() || j.FinishedAt == nil {
			continue
		}
		if _, ok := parents[j.ParentJobID]; !ok {
			ids = append(ids, j.ParentJobID)
		}
		parents[j.ParentJobID] = ended{j.ID, *j.FinishedAt}
	}
	if len(ids) == 0 {
		return nil
	}
	jobs, err := tx.JobGet(ctx, ids)
	if err != nil {
		return err
	}
	for _, p := range jobs {
		c := parents[p.ID]
		if wait, ok := lifecycle.Suspended(p); ok && wait == WaitChild(c.child) {
			wake := lifecycle.Command{Op: lifecycle.OpWake, Actor: lifecycle.ActorSystem, ActorID: "child:" + c.child}
			if _, err := e.step(ctx, tx, b, p, wake, nil, notBefore(c.at, p)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *engine) JobSteps(ctx context.Context, jobID string) ([]StepRecord, error) {
	var out []StepRecord
	err := e.stepRead(ctx, jobID, func(st StepTx) (err error) {
		out, err = st.StepList(ctx, []string{jobID})
		return err
	})
	return out, err
}

func (e *engine) JobSignalGet(ctx context.Context, jobID, name string) (Signal, bool, error) {
	var out Signal
	var found bool
	err := e.stepRead(ctx, jobID, func(st StepTx) (err error) {
		out, found, err = st.SignalGet(ctx, jobID, name)
		return err
	})
	return out, found, err
}

func (e *engine) JobSignals(ctx context.Context, jobID string) ([]Signal, error) {
	var out []Signal
	err := e.stepRead(ctx, jobID, func(st StepTx) (err error) {
		out, err = st.SignalList(ctx, jobID)
		return err
	})
	return out, err
}

func (e *engine) stepRead(ctx context.Context, jobID string, fn func(StepTx) error) error {
	if err := checkID(jobID); err != nil {
		return err
	}
	return e.d.Read(ctx, func(tx Tx) error {
		st, ok := tx.(StepTx)
		if !ok {
			return fmt.Errorf("durable steps: %w", ErrUnsupported)
		}
		return fn(st)
	})
}
