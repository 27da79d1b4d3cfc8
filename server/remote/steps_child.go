package remote

import (
	"context"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

// Child steps over a server: a worker token may neither enqueue nor read
// any job, so the lease holder starts a child with WorkerService's
// StartChild (the enqueue and its step in one transaction, fenced on the
// lease) and reads its own job's children with GetChild.

// JobStepChild enqueues a child of the owner's running job as its next step.
func (s *Store) JobStepChild(ctx context.Context, p *store.JobStepChildParams) (store.ChildStep, error) {
	if err := noNow(p.Now); err != nil {
		return store.ChildStep{}, err
	}
	sp, err := spec(p.Spec, s.opts.Tenant)
	if err != nil {
		return store.ChildStep{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.StartChild,
		&stintv1.StartChildRequest{Owner: owner(p.OwnerParams), Seq: int32(p.Seq), Name: p.Name, Job: sp})
	if err != nil {
		return store.ChildStep{}, fromWire(err)
	}
	return store.ChildStep{Parent: job(res.Job), Step: stepRecord(res.Step), Child: job(res.Child)}, nil
}

// JobChildLeased returns a child of the job p's lease holds (a worker
// token may call it). Its result is the recorded JSON text, byte for byte.
func (s *Store) JobChildLeased(ctx context.Context, p *store.OwnerParams, childID string) (store.Job, error) {
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.GetChild, &stintv1.GetChildRequest{Owner: owner(*p), ChildId: childID})
	if err != nil {
		return store.Job{}, fromWire(err)
	}
	c := job(res.Child)
	c.Result = rawText(res.Result)
	return c, nil
}
