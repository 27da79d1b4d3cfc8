package remote

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

func owner(p store.OwnerParams) *stintv1.Owner {
	return &stintv1.Owner{JobId: p.JobID, LeaseId: p.LeaseID, RequestId: requestID(p.RequestID)}
}

// requestID is the request id of a call: the caller's, or a fresh one, so
// that a call repeated on another server of the cluster (see call) is
// recognized as the same request.
func requestID(id string) string {
	if id != "" {
		return id
	}
	return newID()
}

// noNow refuses a caller's clock: over a server, time is the server's.
func noNow(t *time.Time) error {
	if t != nil {
		return lifecycle.Validationf("Now is set, but over a server time is the server's clock: leave it nil")
	}
	return nil
}

// JobEnqueue creates jobs in one transaction on the server.
func (s *Store) JobEnqueue(ctx context.Context, p *store.JobEnqueueParams) ([]store.EnqueueResult, error) {
	if err := noNow(p.Now); err != nil {
		return nil, err
	}
	if len(p.RequestIDs) > 0 {
		return nil, lifecycle.Validationf("RequestIDs (a request id per job) is not carried over a server: enqueue each job with its own RequestID")
	}
	req := &stintv1.EnqueueManyRequest{RequestId: requestID(p.RequestID)}
	for _, sp := range p.Jobs {
		ps, err := spec(sp, s.opts.Tenant)
		if err != nil {
			return nil, err
		}
		req.Jobs = append(req.Jobs, ps)
	}
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.EnqueueMany, (req))
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.EnqueueResult, len(res.Results))
	for i, r := range res.Results {
		out[i] = store.EnqueueResult{Job: job(r.Job), Existing: r.Existing}
	}
	return out, nil
}

// JobClaim claims in one call as many jobs as p.Limit asks. With a ctx of
// store.WithClaimWaiting it long-polls: the server parks the claim until it
// can lease jobs for it or Options.ClaimWait passes. Otherwise it claims
// without waiting.
func (s *Store) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return nil, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Claim, s.claimRequest(ctx, p))
	if err != nil {
		return nil, fromWire(err)
	}
	return jobsOf(res.Jobs), nil
}

// claimRequest is the request of a claim: a long poll when ctx is of
// store.WithClaimWaiting and the store waits.
func (s *Store) claimRequest(ctx context.Context, p *store.JobClaimParams) *stintv1.ClaimRequest {
	var wait *durationpb.Duration
	if s.ClaimWaits() && store.ClaimWaiting(ctx) {
		wait = durationpb.New(s.opts.ClaimWait)
	}
	return &stintv1.ClaimRequest{
		Wait:   wait,
		Queues: p.Queues, Kinds: p.Kinds, Topics: p.Topics, Limit: int32(p.Limit), LeaseTtl: durationpb.New(p.LeaseTTL),
		// No request id of our own: a claim repeated on another server after
		// a lost reply at worst leases jobs this worker never hears of, which
		// the reaper requeues when their lease expires; a request id lookup
		// on every claim costs more than that rare delay.
		Start: p.Start, WorkerId: p.WorkerID, RequestId: p.RequestID,
	}
}

func jobsOf(js []*stintv1.Job) []store.Job {
	out := make([]store.Job, len(js))
	for i, j := range js {
		out[i] = job(j)
	}
	return out
}

// jobOf unwraps a reply that carries a job.
func jobOf(j interface{ GetJob() *stintv1.Job }, err error) (store.Job, error) {
	if err != nil {
		return store.Job{}, fromWire(err)
	}
	return job(j.GetJob()), nil
}

func (s *Store) JobStart(ctx context.Context, p *store.OwnerParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Start, (&stintv1.StartRequest{Owner: owner(*p)}))
	return jobOf(res, err)
}

// JobHeartbeat renews a lease. Heartbeats sent at the same moment (a
// pool's beat) travel together in one HeartbeatMany call (beats.go).
func (s *Store) JobHeartbeat(ctx context.Context, p *store.JobHeartbeatParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	progress, err := valueOf("progress", p.Progress)
	if err != nil {
		return store.Job{}, err
	}
	return s.beats.send(ctx, s, &stintv1.HeartbeatRequest{
		Owner: owner(p.OwnerParams), LeaseTtl: durationpb.New(p.LeaseTTL), Progress: progress, Phase: p.Phase})
}

func (s *Store) JobCheckpoint(ctx context.Context, p *store.JobCheckpointParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	cp, err := valueOf("checkpoint", p.Checkpoint)
	if err != nil {
		return store.Job{}, err
	}
	progress, err := valueOf("progress", p.Progress)
	if err != nil {
		return store.Job{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Checkpoint, (&stintv1.CheckpointRequest{
		Owner: owner(p.OwnerParams), Checkpoint: cp, Progress: progress, Phase: p.Phase, Steps: p.Steps, Cost: p.Cost}))
	return jobOf(res, err)
}

// JobComplete completes a batch in one call and one transaction.
func (s *Store) JobComplete(ctx context.Context, ps []store.JobCompleteParams) ([]store.Result, error) {
	items, err := completions(ps)
	if err != nil {
		return nil, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.CompleteMany, &stintv1.CompleteManyRequest{Completions: items})
	if err != nil {
		return nil, fromWire(err)
	}
	return results(res.Results), nil
}

// completions are the items of a CompleteMany or CompleteAndClaim.
func completions(ps []store.JobCompleteParams) ([]*stintv1.CompleteRequest, error) {
	out := make([]*stintv1.CompleteRequest, 0, len(ps))
	for _, p := range ps {
		if err := noNow(p.Now); err != nil {
			return nil, err
		}
		result, err := valueOf("result", p.Result)
		if err != nil {
			return nil, err
		}
		out = append(out, &stintv1.CompleteRequest{
			Owner: owner(p.OwnerParams), Result: result, ResultPtr: p.ResultPtr, ExecutionMs: p.ExecutionMS})
	}
	return out, nil
}

// results turns the items of a completion reply into the store's results.
func results(rs []*stintv1.CompleteResult) []store.Result {
	out := make([]store.Result, len(rs))
	for i, r := range rs {
		if r.ErrorCode != "" {
			out[i].Err = itemError(r)
			continue
		}
		out[i].Job = job(r.Job)
	}
	return out
}

// itemError rebuilds the error of one refused item of a batch.
func itemError(r interface {
	GetErrorCode() string
	GetErrorKind() string
	GetErrorMessage() string
}) error {
	var code connect.Code
	if err := code.UnmarshalText([]byte(r.GetErrorCode())); err != nil {
		code = connect.CodeUnknown
	}
	return &Error{Kind: server.KindError(r.GetErrorKind()), Code: code, Msg: r.GetErrorMessage()}
}

func (s *Store) JobFail(ctx context.Context, p *store.JobFailParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	req := &stintv1.FailRequest{Owner: owner(p.OwnerParams), ErrorCode: p.Error.Code, ErrorMessage: p.Error.Message,
		ErrorClass: classProto(p.Error.Class), ExecutionMs: p.ExecutionMS}
	if b := p.Backoff; b != (lifecycle.Backoff{}) {
		req.Backoff = &stintv1.Backoff{Base: durOf(b.Base), Factor: b.Factor, Max: durOf(b.Max)}
	}
	retryAfter := p.RetryAfter
	if p.RetryAt != nil {
		// A time on the caller's clock: sent as the delay from now, which
		// the server resolves on its own clock, so skew between the two
		// clocks cannot move the retry.
		retryAfter = max(p.RetryAt.Sub(s.opts.Clock.Now()), time.Millisecond)
	}
	if retryAfter > 0 {
		req.RetryAfter = durationpb.New(retryAfter)
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Fail, (req))
	return jobOf(res, err)
}

func (s *Store) JobHalt(ctx context.Context, p *store.JobHaltParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Halt, (&stintv1.HaltRequest{
		Owner: owner(p.OwnerParams), ReasonCode: p.ReasonCode, Reason: p.Reason, ExecutionMs: p.ExecutionMS}))
	return jobOf(res, err)
}

func (s *Store) JobRelease(ctx context.Context, p *store.JobReleaseParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.Release, (&stintv1.ReleaseRequest{Owner: owner(p.OwnerParams), Reason: p.Reason, Requeue: p.Requeue}))
	return jobOf(res, err)
}

func (s *Store) JobAckCancel(ctx context.Context, p *store.OwnerParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.AckCancel, (&stintv1.AckCancelRequest{Owner: owner(*p)}))
	return jobOf(res, err)
}

// JobDeadLetter dead-letters the owner's job; the system form (no lease) is
// the server's.
func (s *Store) JobDeadLetter(ctx context.Context, p *store.JobDeadLetterParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	if p.LeaseID == "" {
		return store.Job{}, &UnsupportedError{"JobDeadLetter without a lease"}
	}
	req := &stintv1.DeadLetterRequest{Owner: owner(p.OwnerParams), ReasonCode: p.ReasonCode}
	if p.Error != nil {
		req.ErrorCode, req.ErrorMessage = p.Error.Code, p.Error.Message
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.DeadLetter, (req))
	return jobOf(res, err)
}

func (s *Store) JobCancel(ctx context.Context, p *store.JobCancelParams) (store.Job, error) {
	if err := noNow(p.Now); err != nil {
		return store.Job{}, err
	}
	if p.ExpectedRev != nil {
		return store.Job{}, lifecycle.Validationf("ExpectedRev is not offered over a server; cancel without it")
	}
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.CancelJob, (&stintv1.CancelJobRequest{Id: p.JobID, Hard: p.Hard, Reason: p.Reason, RequestId: p.RequestID}))
	return jobOf(res, err)
}

func (s *Store) JobGet(ctx context.Context, id string) (store.Job, error) {
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.GetJob, (&stintv1.GetJobRequest{Id: id}))
	return jobOf(res, err)
}

// JobList pages through the server's listing until p.Limit jobs or the end.
func (s *Store) JobList(ctx context.Context, p *store.JobListParams) ([]store.Job, error) {
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	req := &stintv1.ListJobsRequest{Queue: p.Queue, Kind: p.Kind, PageToken: p.AfterID}
	for _, st := range p.States {
		req.States = append(req.States, stateProto(st))
	}
	var out []store.Job
	for len(out) < limit {
		req.PageSize = int32(min(limit-len(out), 1000))
		res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.ListJobs, (req))
		if err != nil {
			return nil, fromWire(err)
		}
		for _, j := range res.Jobs {
			out = append(out, job(j))
		}
		if res.NextPageToken == "" {
			break
		}
		req.PageToken = res.NextPageToken
	}
	return out, nil
}

func (s *Store) JobEvents(ctx context.Context, id string) ([]store.Event, error) {
	res, err := callJobs(ctx, s, stintv1connect.JobServiceClient.ListEvents, (&stintv1.ListEventsRequest{JobId: id}))
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.Event, len(res.Events))
	for i, e := range res.Events {
		out[i] = event(e)
	}
	return out, nil
}

// JobProvenance reads the job: provenance lives in its terminal row.
func (s *Store) JobProvenance(ctx context.Context, id string) (store.Provenance, error) {
	j, err := s.JobGet(ctx, id)
	if err != nil {
		return store.Provenance{}, err
	}
	p, ok := lifecycle.ProvenanceOf(j)
	if !ok {
		return store.Provenance{}, &Error{Kind: store.ErrNotFound, Code: connect.CodeNotFound, Msg: "job " + id + " is " + string(j.State) + ": provenance is recorded when it ends"}
	}
	return p, nil
}
