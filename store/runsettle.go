package store

import (
	"context"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// runEngineID names the run engine in the events it writes.
const runEngineID = "stint:run-engine"

// settleRuns is the run engine's hook in every write: for each run whose jobs
// changed state in this transaction (or that a run operation touched), it
// asks lifecycle.DecideRun what must follow and does it here, in the same
// transaction. The jobs it changes are settled in turn, until nothing follows.
func (e *engine) settleRuns(ctx context.Context, tx Tx, b *batch) error {
	rt, ok := tx.(RunTx)
	if !ok {
		return nil
	}
	for round := 0; round < 8; round++ {
		var ids []string
		at := b.runs.at
		for _, ev := range b.events[b.runs.seen:] {
			if ev.RunID != "" && ev.FromState != ev.ToState && !slices.Contains(ids, ev.RunID) {
				ids = append(ids, ev.RunID)
			}
			if ev.At.After(at) {
				at = ev.At
			}
		}
		b.runs.seen = len(b.events)
		for _, id := range b.runs.touched {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		b.runs.touched = nil
		if len(ids) == 0 {
			return nil
		}
		if at.IsZero() {
			t, err := now(ctx, tx, nil)
			if err != nil {
				return err
			}
			at = t
		}
		slices.Sort(ids) // a stable lock order between transactions
		for _, id := range ids {
			if err := e.settleRun(ctx, rt, tx, b, id, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleRun carries out one run's plan.
func (e *engine) settleRun(ctx context.Context, rt RunTx, tx Tx, b *batch, id string, at time.Time) error {
	en, err := lockRun(ctx, rt, b, id)
	if err != nil {
		if IsRejection(err) {
			return nil // a job naming a run that was never created: nothing to settle
		}
		return err
	}
	jobs, err := runJobsNow(ctx, rt, b, id)
	if err != nil {
		return err
	}
	plan := lifecycle.DecideRun(en.run, runNodes(jobs), at)
	if plan.Empty() {
		return nil
	}
	byName := map[string]RunJob{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	do := func(names []string, cmd lifecycle.Command) error {
		for _, name := range names {
			j, ok, err := jobNow(ctx, tx, b, byName[name].JobID)
			if err != nil {
				return err
			}
			if !ok || j.State.Terminal() {
				continue
			}
			_, err = e.step(ctx, tx, b, j, cmd, nil, at)
			if err != nil && cmd.Op == lifecycle.OpTimeOut && IsRejection(err) {
				// A job without the run's deadline (none should be) ends anyway.
				hard := lifecycle.Command{Op: lifecycle.OpCancelHard, Actor: lifecycle.ActorClient, ActorID: runEngineID,
					Reason: "its run timed out"}
				_, err = e.step(ctx, tx, b, j, hard, nil, at)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	sys := lifecycle.Command{Actor: lifecycle.ActorSystem, ActorID: runEngineID}
	cancel := lifecycle.Command{Op: lifecycle.OpCancel, Actor: lifecycle.ActorClient, ActorID: runEngineID}
	unblock, timeout, upstream, runCancel := sys, sys, cancel, cancel
	unblock.Op = lifecycle.OpUnblock
	timeout.Op, timeout.Deadline = lifecycle.OpTimeOut, true
	upstream.ReasonCode, upstream.Reason = lifecycle.ReasonUpstreamFailed, "a job it depends on ended without success"
	runCancel.ReasonCode, runCancel.Reason = lifecycle.ReasonRunFailed, "its run failed"
	if en.run.State == lifecycle.RunCancelRequested || en.run.State == lifecycle.RunCancelled {
		runCancel.ReasonCode, runCancel.Reason = lifecycle.ReasonRunCancelled, "its run was cancelled"
	}
	for _, step := range []struct {
		names []string
		cmd   lifecycle.Command
	}{{plan.Unblock, unblock}, {plan.Upstream, upstream}, {plan.Cancel, runCancel}, {plan.TimeOut, timeout}} {
		if err := do(step.names, step.cmd); err != nil {
			return err
		}
	}
	if plan.Run == "" {
		return nil
	}
	s, err := lifecycle.ApplyRun(en.run, lifecycle.RunCommand{Op: plan.Run, Actor: lifecycle.ActorSystem, ActorID: runEngineID,
		JobID: byName[plan.JobName].JobID, ReasonCode: plan.ReasonCode, Reason: plan.Reason}, notBeforeRun(at, en.run))
	if err != nil {
		return err
	}
	b.runs.step(en, s)
	if plan.Run == lifecycle.RunOpFail || plan.Run == lifecycle.RunOpTimeOut {
		// What the run now decides for its live jobs follows in the next round.
		b.runs.touched = append(b.runs.touched, id)
	}
	return nil
}

// runJobsNow returns a run's jobs with the states this transaction gave them.
func runJobsNow(ctx context.Context, rt RunTx, b *batch, id string) ([]RunJob, error) {
	jobs, err := rt.RunJobList(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, nj := range b.runs.jobs {
		if nj.RunID == id && !slices.ContainsFunc(jobs, func(j RunJob) bool { return j.JobID == nj.JobID }) {
			jobs = append(jobs, nj)
		}
	}
	names := map[string]string{}
	for _, j := range jobs {
		names[j.JobID] = j.Name
	}
	for i := range jobs {
		if cur, ok := b.latest(jobs[i].JobID); ok {
			jobs[i].State, jobs[i].DependsOnIDs = cur.State, cur.DependsOn
		}
		jobs[i].DependsOn = jobs[i].DependsOn[:0:0]
		for _, d := range jobs[i].DependsOnIDs {
			jobs[i].DependsOn = append(jobs[i].DependsOn, names[d])
		}
	}
	return jobs, nil
}

func runNodes(jobs []RunJob) []lifecycle.RunNode {
	out := make([]lifecycle.RunNode, len(jobs))
	for i, j := range jobs {
		out[i] = lifecycle.RunNode{Name: j.Name, JobID: j.JobID, State: j.State, AllowFailure: j.AllowFailure,
			NeedsSuccess: j.NeedsSuccess, Planner: j.Planner, DependsOn: j.DependsOn}
	}
	return out
}

// notBeforeRun keeps a run's time moving forward, like notBefore for jobs.
func notBeforeRun(t time.Time, r lifecycle.Run) time.Time {
	if t.Before(r.UpdatedAt) {
		return r.UpdatedAt
	}
	return t
}
