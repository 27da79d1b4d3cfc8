package store

import (
	"context"

	"github.com/stint-dev/stint/lifecycle"
)

func (e *engine) JobGet(ctx context.Context, id string) (Job, error) {
	if err := checkID(id); err != nil {
		return Job{}, err
	}
	var out Job
	err := e.d.Read(ctx, func(tx Tx) error {
		jobs, err := tx.JobGet(ctx, []string{id})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return notFound(id)
		}
		out = jobs[0]
		return nil
	})
	return out, err
}

func (e *engine) JobList(ctx context.Context, p *JobListParams) ([]Job, error) {
	q := *p
	switch {
	case q.Limit == 0:
		q.Limit = 100
	case q.Limit < 0 || q.Limit > MaxBatch:
		return nil, lifecycle.Validationf("list limit %d: expected 1 to %d", q.Limit, MaxBatch)
	}
	if err := lifecycle.CheckTexts("queue", q.Queue, "kind", q.Kind, "after id", q.AfterID); err != nil {
		return nil, err
	}
	for _, s := range q.States {
		if !s.Valid() {
			return nil, lifecycle.Validationf("unknown state %q: expected one of %v", s, lifecycle.States)
		}
	}
	var out []Job
	err := e.d.Read(ctx, func(tx Tx) error {
		var err error
		out, err = tx.JobList(ctx, q)
		return err
	})
	return out, err
}

func (e *engine) JobEvents(ctx context.Context, id string) ([]Event, error) {
	if _, err := e.JobGet(ctx, id); err != nil {
		return nil, err
	}
	var out []Event
	err := e.d.Read(ctx, func(tx Tx) error {
		var err error
		out, err = tx.EventList(ctx, []string{id})
		return err
	})
	return out, err
}

func (e *engine) JobProvenance(ctx context.Context, id string) (Provenance, error) {
	j, err := e.JobGet(ctx, id)
	if err != nil {
		return Provenance{}, err
	}
	p, ok := lifecycle.ProvenanceOf(j)
	if !ok {
		return Provenance{}, &lifecycle.Error{Kind: ErrNotFound, JobID: id, Msg: "no provenance record: the job is " + string(j.State) + ", not terminal; it gets one when it ends"}
	}
	return p, nil
}

// verifyPage is how many jobs Verify reads per transaction.
const verifyPage = 500

func (e *engine) Verify(ctx context.Context, p *VerifyParams) (VerifyReport, error) {
	var rep VerifyReport
	rep.Findings = []Finding{}
	after := ""
	for {
		var jobs []Job
		var events []Event
		var steps map[string][]StepRecord
		err := e.d.Read(ctx, func(tx Tx) error {
			var err error
			if jobs, err = tx.JobList(ctx, JobListParams{AfterID: after, Limit: verifyPage}); err != nil || len(jobs) == 0 {
				return err
			}
			ids := make([]string, len(jobs))
			for i, j := range jobs {
				ids[i] = j.ID
			}
			if events, err = tx.EventList(ctx, ids); err != nil {
				return err
			}
			steps, err = stepsOf(ctx, tx, ids)
			return err
		})
		if err != nil {
			return rep, err
		}
		if len(jobs) == 0 {
			return rep, e.verifyRuns(ctx, p, &rep)
		}
		byJob := map[string][]Event{}
		for _, ev := range events {
			byJob[ev.JobID] = append(byJob[ev.JobID], ev)
		}
		rep.Events += len(events)
		for _, j := range jobs {
			rep.Jobs++
			if p != nil && p.OnJob != nil {
				p.OnJob(j, byJob[j.ID])
			}
			problem := verifyJob(j, byJob[j.ID])
			if problem == "" {
				problem = verifySteps(byJob[j.ID], steps[j.ID])
			}
			if problem != "" {
				f := Finding{JobID: j.ID, Problem: problem}
				rep.Findings = append(rep.Findings, f)
				if p != nil && p.OnFinding != nil {
					p.OnFinding(f)
				}
			}
		}
		after = jobs[len(jobs)-1].ID
	}
}

func verifyJob(j Job, events []Event) string {
	if err := lifecycle.Verify(j, events); err != nil {
		return err.Error()
	}
	return ""
}
