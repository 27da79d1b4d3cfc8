package remote

import (
	"context"
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

// Durable steps over a server (docs/steps.md, "Over the network"): a pool
// on this store runs stint.Step handlers with the same guarantees as on a
// database. The owner's calls (record, suspend, and the reads of its own
// job, store.LeasedStepReader) go to WorkerService, fenced on the lease;
// the reads of any job and signals go to JobService.

var (
	_ store.StepStore        = (*Store)(nil)
	_ store.LeasedStepReader = (*Store)(nil)
)

// JobStepRecord records the next step of the owner's running job.
func (s *Store) JobStepRecord(ctx context.Context, p *store.JobStepParams) (store.Job, store.StepRecord, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, store.StepRecord{}, err
	}
	req := &stintv1.RecordStepRequest{Owner: owner(p.OwnerParams), Seq: int32(p.Seq), Name: p.Name, Kind: p.Kind,
		Status: p.Status, Output: string(p.Output), DurationMs: p.DurationMS}
	if p.Error != nil {
		req.ErrorCode, req.ErrorMessage = p.Error.Code, p.Error.Message
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.RecordStep, req)
	if err != nil {
		return store.Job{}, store.StepRecord{}, fromWire(err)
	}
	return job(res.Job), stepRecord(res.Step), nil
}

// JobSuspend gives the owner's lease back until a wake time.
func (s *Store) JobSuspend(ctx context.Context, p *store.JobSuspendParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	req := &stintv1.SuspendRequest{Owner: owner(p.OwnerParams), ExecutionMs: p.ExecutionMS}
	if p.Until != nil {
		req.Until = tsOf(p.Until)
	} else {
		req.After = durationpb.New(p.For)
	}
	if name, ok := strings.CutPrefix(p.Wait, "signal:"); ok {
		req.Signal = name
	} else if id, ok := strings.CutPrefix(p.Wait, "child:"); ok {
		req.Child = id
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Suspend, req)
	return jobOf(res, err)
}

// JobSignal sends a named signal to a job.
func (s *Store) JobSignal(ctx context.Context, p *store.JobSignalParams) (store.Signal, error) {
	if err := noNow(p.Now); err != nil {
		return store.Signal{}, err
	}
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.SignalJob, &stintv1.SignalJobRequest{Id: p.JobID, Name: p.Name, Payload: string(p.Payload)})
	if err != nil {
		return store.Signal{}, fromWire(err)
	}
	return signal(res.Signal), nil
}

// listSteps reads a job's steps and signals (JobService: a client token).
func (s *Store) listSteps(ctx context.Context, id string) (*stintv1.ListStepsResponse, error) {
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.ListSteps, &stintv1.ListStepsRequest{Id: id})
	return res, fromWire(err)
}

// JobSteps returns a job's step records in order.
func (s *Store) JobSteps(ctx context.Context, id string) ([]store.StepRecord, error) {
	res, err := s.listSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	return stepRecords(res.Steps), nil
}

// JobSignalGet returns the signal of a name sent to a job, if any.
func (s *Store) JobSignalGet(ctx context.Context, id, name string) (store.Signal, bool, error) {
	sigs, err := s.JobSignals(ctx, id)
	if err != nil {
		return store.Signal{}, false, err
	}
	for _, g := range sigs {
		if g.Name == name {
			return g, true, nil
		}
	}
	return store.Signal{}, false, nil
}

// JobSignals returns the signals sent to a job.
func (s *Store) JobSignals(ctx context.Context, id string) ([]store.Signal, error) {
	res, err := s.listSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]store.Signal, len(res.Signals))
	for i, g := range res.Signals {
		out[i] = signal(g)
	}
	return out, nil
}

// JobStepsLeased returns the steps of the job p's lease holds (a worker
// token may call it).
func (s *Store) JobStepsLeased(ctx context.Context, p *store.OwnerParams) ([]store.StepRecord, error) {
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.GetSteps, &stintv1.GetStepsRequest{Owner: owner(*p)})
	if err != nil {
		return nil, fromWire(err)
	}
	return stepRecords(res.Steps), nil
}

// JobSignalLeased returns the signal of a name sent to the job p's lease
// holds, if any.
func (s *Store) JobSignalLeased(ctx context.Context, p *store.OwnerParams, name string) (store.Signal, bool, error) {
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.GetSignal, &stintv1.GetSignalRequest{Owner: owner(*p), Name: name})
	if err != nil {
		return store.Signal{}, false, fromWire(err)
	}
	if !res.Found {
		return store.Signal{}, false, nil
	}
	return signal(res.Signal), true, nil
}

// rawText is JSON text from the wire; empty is none.
func rawText(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func stepRecord(p *stintv1.Step) store.StepRecord {
	if p == nil {
		return store.StepRecord{}
	}
	return store.StepRecord{JobID: p.JobId, Seq: int(p.Seq), Name: p.Name, Kind: p.Kind, Attempt: int(p.Attempt),
		LeaseID: p.LeaseId, Status: p.Status, Output: rawText(p.Output), Error: jobError(p.Error), DurationMS: p.DurationMs,
		RecordedAt: timeOf(p.RecordedAt)}
}

func stepRecords(ps []*stintv1.Step) []store.StepRecord {
	out := make([]store.StepRecord, len(ps))
	for i, p := range ps {
		out[i] = stepRecord(p)
	}
	return out
}

func signal(p *stintv1.Signal) store.Signal {
	if p == nil {
		return store.Signal{}
	}
	return store.Signal{JobID: p.JobId, Name: p.Name, Payload: rawText(p.Payload), ActorID: p.ActorId, SentAt: timeOf(p.SentAt)}
}
