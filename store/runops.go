package store

import (
	"context"
	"slices"

	"github.com/stint-dev/stint/lifecycle"
)

// RunCancel asks the run to stop; the settling in the same transaction
// cancels its jobs (two-phase) and ends the run when none holds a lease.
func (e *engine) RunCancel(ctx context.Context, p *RunCancelParams) (RunView, error) {
	if err := checkRunID(p.RunID); err != nil {
		return RunView{}, err
	}
	if err := lifecycle.CheckTexts("reason", p.Reason, "actor id", p.ActorID); err != nil {
		return RunView{}, err
	}
	err := e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		en, err := lockRun(ctx, rt, b, p.RunID)
		if err != nil {
			return err
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		t = notBeforeRun(t, en.run)
		s, err := lifecycle.ApplyRun(en.run, lifecycle.RunCommand{Op: lifecycle.RunOpCancel, Actor: lifecycle.ActorClient,
			ActorID: p.ActorID, ReasonCode: lifecycle.ReasonCancelled, Reason: firstNonEmptyStr(p.Reason, "cancelled by a client")}, t)
		if err != nil {
			return err
		}
		b.runs.step(en, s)
		b.runs.at = t
		b.runs.touched = append(b.runs.touched, p.RunID)
		return nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.RunGet(ctx, p.RunID)
}

// RunRerun makes a new run from an ended one with the same jobs (all, or
// those that did not succeed), linked by rerun_of.
func (e *engine) RunRerun(ctx context.Context, p *RunRerunParams) (RunView, error) {
	old, err := e.RunGet(ctx, p.RunID)
	if err != nil {
		return RunView{}, err
	}
	if !old.Run.State.Terminal() {
		return RunView{}, &lifecycle.Error{Kind: lifecycle.ErrInvalidTransition,
			Msg: "run " + old.Run.ID + " is " + string(old.Run.State) + ": rerun a run once it has ended (or cancel it first)"}
	}
	ids := make([]string, len(old.Jobs))
	for i, j := range old.Jobs {
		ids[i] = j.JobID
	}
	var jobs []lifecycle.Job
	if err := e.d.Read(ctx, func(tx Tx) error {
		var err error
		jobs, err = tx.JobGet(ctx, ids)
		return err
	}); err != nil {
		return RunView{}, err
	}
	byID := map[string]lifecycle.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	keep := func(j RunJob) bool { return !p.FailedOnly || j.State != lifecycle.Succeeded }
	var specs []RunJobSpec
	for _, rj := range old.Jobs {
		if !keep(rj) {
			continue
		}
		var deps []string
		for _, d := range rj.DependsOn {
			if i := slices.IndexFunc(old.Jobs, func(o RunJob) bool { return o.Name == d }); i >= 0 && keep(old.Jobs[i]) {
				deps = append(deps, d)
			}
		}
		specs = append(specs, RunJobSpec{Name: rj.Name, Spec: SpecOf(byID[rj.JobID]), DependsOn: deps,
			AllowFailure: rj.AllowFailure, NeedsSuccess: rj.NeedsSuccess, Planner: rj.Planner})
	}
	if len(specs) == 0 {
		return RunView{}, lifecycle.Validationf("run %s has no job that did not succeed: nothing to rerun with --failed-only", p.RunID)
	}
	return e.RunCreate(ctx, &RunCreateParams{Run: lifecycle.RunSpec{Tenant: old.Run.Tenant, Name: old.Run.Name,
		OnFailure: old.Run.OnFailure, Timeout: old.Run.Timeout.D(), RerunOf: old.Run.ID, ActorID: p.ActorID}, Jobs: specs, Now: p.Now})
}

// SpecOf returns the spec that would enqueue j again, without its run
// links and one-off times (run_at, deadline).
func SpecOf(j lifecycle.Job) lifecycle.Spec {
	s := lifecycle.Spec{Kind: j.Kind, Queue: j.Queue, Topic: j.Topic, Priority: j.Priority, Payload: j.Payload,
		ContextPtr: j.ContextPtr, AdapterID: j.AdapterID, Env: j.Env, Tenant: j.Tenant, Timeout: j.Timeout.D(),
		MaxAttempts: j.MaxAttempts, OnExhausted: j.OnExhausted, CancelGrace: j.CancelGrace.D(), Budget: j.Budget,
		CorrelationID: j.CorrelationID, TraceID: j.TraceID}
	return s
}

// RunTimeOutDue times out the runs past their timeout; settling in the same
// transaction times out their live jobs.
func (e *engine) RunTimeOutDue(ctx context.Context, p *MaintainParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	n := 0
	err := e.write(ctx, func(tx Tx, b *batch) error {
		n = 0
		rt, ok := tx.(RunTx)
		if !ok {
			return nil
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		ids, err := rt.RunDue(ctx, t, limit)
		if err != nil {
			return err
		}
		b.runs.at = t
		for _, id := range ids {
			en, err := lockRun(ctx, rt, b, id)
			if err != nil {
				return err
			}
			if en.run.State.Terminal() {
				continue
			}
			b.runs.touched = append(b.runs.touched, id)
			n++
		}
		return nil
	})
	return n, err
}

// RunGet returns a run with its jobs.
func (e *engine) RunGet(ctx context.Context, id string) (RunView, error) {
	if err := checkRunID(id); err != nil {
		return RunView{}, err
	}
	var v RunView
	err := e.d.Read(ctx, func(tx Tx) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		r, ok, err := rt.RunGet(ctx, id)
		if err != nil {
			return err
		}
		if !ok {
			return runNotFound(id)
		}
		var b batch
		jobs, err := runJobsNow(ctx, rt, &b, id)
		v = RunView{Run: r, Jobs: jobs}
		return err
	})
	return v, err
}

// RunList returns runs ordered by id.
func (e *engine) RunList(ctx context.Context, p *RunListParams) ([]Run, error) {
	q := *p
	if q.Limit <= 0 {
		q.Limit = 100
	}
	if q.Limit > 10000 {
		return nil, lifecycle.Validationf("limit %d: at most 10000; page with AfterID", q.Limit)
	}
	var out []Run
	err := e.d.Read(ctx, func(tx Tx) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		var err error
		out, err = rt.RunList(ctx, q)
		return err
	})
	return out, err
}

// RunEvents returns a run's events in order.
func (e *engine) RunEvents(ctx context.Context, id string) ([]RunEvent, error) {
	if _, err := e.RunGet(ctx, id); err != nil {
		return nil, err
	}
	var out []RunEvent
	err := e.d.Read(ctx, func(tx Tx) error {
		var err error
		out, err = tx.(RunTx).RunEventList(ctx, id)
		return err
	})
	return out, err
}

// verifyRuns replays every run's events and adds a finding for each run
// whose row disagrees or breaks an invariant.
func (e *engine) verifyRuns(ctx context.Context, p *VerifyParams, rep *VerifyReport) error {
	after := ""
	for {
		var runs []Run
		events := map[string][]RunEvent{}
		err := e.d.Read(ctx, func(tx Tx) error {
			rt, ok := tx.(RunTx)
			if !ok {
				return nil
			}
			var err error
			if runs, err = rt.RunList(ctx, RunListParams{AfterID: after, Limit: verifyPage}); err != nil {
				return err
			}
			for _, r := range runs {
				if events[r.ID], err = rt.RunEventList(ctx, r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || len(runs) == 0 {
			return err
		}
		for _, r := range runs {
			rep.Runs++
			if err := lifecycle.VerifyRun(r, events[r.ID]); err != nil {
				f := Finding{RunID: r.ID, Problem: err.Error()}
				rep.Findings = append(rep.Findings, f)
				if p != nil && p.OnFinding != nil {
					p.OnFinding(f)
				}
			}
		}
		after = runs[len(runs)-1].ID
	}
}
