package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// RunCreate validates the whole run before writing anything: the run spec,
// the graph (names, depends_on inside the run, no cycle) and every job spec.
func (e *engine) RunCreate(ctx context.Context, p *RunCreateParams) (RunView, error) {
	if len(p.Jobs) > MaxBatch {
		return RunView{}, lifecycle.Validationf("%d jobs in one run: the limit is %d", len(p.Jobs), MaxBatch)
	}
	if err := lifecycle.CheckRunGraph(nil, runSpecNodes(p.Jobs)); err != nil {
		return RunView{}, err
	}
	spec := p.Run
	if spec.ID == "" {
		spec.ID = e.newID()
	}
	var out RunView
	err := e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		run, ev, err := lifecycle.NewRun(spec, t)
		if err != nil {
			return err
		}
		if _, exists, err := rt.RunGet(ctx, run.ID); err != nil || exists {
			if exists {
				return lifecycle.Validationf("run id %q is taken: choose another or leave it empty", run.ID)
			}
			return err
		}
		b.runs.put(&runEntry{run: run})
		b.runs.events = append(b.runs.events, ev)
		b.runs.at = t
		jobs, err := e.addRunJobs(ctx, tx, b, run, nil, p.Jobs, "", spec.ActorID, t)
		if err != nil {
			return err
		}
		out = RunView{Run: run, Jobs: jobs}
		return nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.RunGet(ctx, out.Run.ID)
}

// addRunJobs enqueues jobs into run (after existing ones), mapping depends_on
// names to job ids, capping deadlines at the run's timeout.
func (e *engine) addRunJobs(ctx context.Context, tx Tx, b *batch, run lifecycle.Run, existing []RunJob, specs []RunJobSpec, parent, actorID string, t time.Time) ([]RunJob, error) {
	ids := map[string]string{}
	for _, j := range existing {
		ids[j.Name] = j.JobID
	}
	for _, s := range specs {
		ids[s.Name] = e.newID()
	}
	out := make([]RunJob, 0, len(specs))
	plain := make([]lifecycle.Spec, len(specs))
	for i, s := range specs {
		plain[i] = s.Spec
	}
	plain, err := e.withDefaults(ctx, tx, plain, t)
	if err != nil {
		return nil, err
	}
	for i, s := range specs {
		spec := plain[i]
		if spec.DedupeKey != "" {
			return nil, lifecycle.Validationf("job %q of the run: dedupe_key is not allowed in a run (the run names its jobs)", s.Name)
		}
		if len(spec.DependsOn) > 0 || (spec.RunID != "" && spec.RunID != run.ID) {
			return nil, lifecycle.Validationf("job %q of the run: set depends_on by name on the run's job, not run_id or depends_on in its spec", s.Name)
		}
		spec.RunID, spec.StepIndex, spec.ParentJobID = run.ID, len(existing)+i, firstNonEmptyStr(spec.ParentJobID, parent)
		if spec.Tenant == "" {
			spec.Tenant = run.Tenant
		}
		spec.DependsOn = nil
		for _, d := range s.DependsOn {
			spec.DependsOn = append(spec.DependsOn, ids[d])
		}
		if run.TimeoutAt != nil && (spec.Deadline == nil || spec.Deadline.After(*run.TimeoutAt)) {
			d := *run.TimeoutAt
			spec.Deadline = &d
		}
		if err := spec.Validate(t); err != nil {
			return nil, fmt.Errorf("job %q of the run: %w", s.Name, err)
		}
		if spec.RunAt != nil {
			r := spec.RunAt.UTC().Truncate(time.Microsecond)
			spec.RunAt = &r
		}
		if spec.Deadline != nil {
			d := spec.Deadline.UTC().Truncate(time.Microsecond)
			spec.Deadline = &d
		}
		step, err := lifecycle.New(ids[s.Name], spec, actorID, "", t)
		if err != nil {
			return nil, fmt.Errorf("job %q of the run: %w", s.Name, err)
		}
		b.add(nil, step)
		rj := RunJob{RunID: run.ID, Name: s.Name, JobID: step.Job.ID, AllowFailure: s.AllowFailure, NeedsSuccess: s.NeedsSuccess,
			Planner: s.Planner, State: step.Job.State, DependsOn: s.DependsOn, DependsOnIDs: spec.DependsOn}
		b.runs.jobs = append(b.runs.jobs, rj)
		out = append(out, rj)
	}
	b.runs.touched = append(b.runs.touched, run.ID)
	return out, nil
}

func runSpecNodes(specs []RunJobSpec) []lifecycle.RunNode {
	out := make([]lifecycle.RunNode, len(specs))
	for i, s := range specs {
		out[i] = lifecycle.RunNode{Name: s.Name, DependsOn: s.DependsOn, AllowFailure: s.AllowFailure, NeedsSuccess: s.NeedsSuccess, Planner: s.Planner}
	}
	return out
}

func firstNonEmptyStr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// RunAddJobs adds jobs to the run of a running job, fenced on its lease: a
// dynamic plan. The new jobs may depend on any job of the run.
func (e *engine) RunAddJobs(ctx context.Context, p *RunAddJobsParams) (RunView, error) {
	if err := checkID(p.Owner.JobID); err != nil {
		return RunView{}, err
	}
	var runID string
	err := e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		js, err := tx.JobGet(ctx, []string{p.Owner.JobID})
		if err != nil {
			return err
		}
		if len(js) == 0 {
			return notFound(p.Owner.JobID)
		}
		owner := js[0]
		if owner.RunID == "" {
			return lifecycle.Validationf("job %s is not part of a run: only a job of a run can add jobs to it", owner.ID)
		}
		if owner.State != lifecycle.Running || owner.LeaseID != p.Owner.LeaseID || p.Owner.LeaseID == "" {
			return &lifecycle.Error{Kind: ErrStaleLease, JobID: owner.ID, State: owner.State,
				Msg: "only the running owner of this job, presenting its lease, can add jobs to its run"}
		}
		runID = owner.RunID
		en, err := lockRun(ctx, rt, b, runID)
		if err != nil {
			return err
		}
		existing, err := runJobsNow(ctx, rt, b, runID)
		if err != nil {
			return err
		}
		names := make([]string, len(p.Jobs))
		for i, s := range p.Jobs {
			names[i] = s.Name
		}
		if done, err := alreadyAdded(ctx, rt, owner, names); err != nil || done {
			return err // a retry of an add that took effect: the run as it is
		}
		if err := lifecycle.CheckRunGraph(runNodes(existing), runSpecNodes(p.Jobs)); err != nil {
			return err
		}
		t, err := now(ctx, tx, p.Owner.Now)
		if err != nil {
			return err
		}
		t = notBeforeRun(t, en.run)
		details, _ := json.Marshal(map[string][]string{"added": names})
		s, err := lifecycle.ApplyRun(en.run, lifecycle.RunCommand{Op: lifecycle.RunOpExtend, Actor: lifecycle.ActorOwner,
			ActorID: owner.Owner, JobID: owner.ID, Details: details}, t)
		if err != nil {
			return err
		}
		b.runs.step(en, s)
		b.runs.at = t
		_, err = e.addRunJobs(ctx, tx, b, en.run, existing, p.Jobs, owner.ID, owner.Owner, t)
		return err
	})
	if err != nil {
		return RunView{}, err
	}
	return e.RunGet(ctx, runID)
}

// alreadyAdded reports whether owner, under its current lease, already
// added jobs with exactly these names to its run: the add carries no
// request id, so a retry (a lost reply) is recognized by its effect, in the
// run's log, and answered with the run instead of a duplicate-name error.
func alreadyAdded(ctx context.Context, rt RunTx, owner lifecycle.Job, names []string) (bool, error) {
	evs, err := rt.RunEventList(ctx, owner.RunID)
	if err != nil {
		return false, err
	}
	for _, e := range evs {
		if e.Type != lifecycle.RunEventJobsAdded || e.JobID != owner.ID || e.ActorID != owner.Owner {
			continue
		}
		var d struct {
			Added []string `json:"added"`
		}
		if json.Unmarshal(e.Details, &d) == nil && slices.Equal(d.Added, names) {
			return true, nil
		}
	}
	return false, nil
}
