package remote

import (
	"context"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

// Runs over the API (RunService, and WorkerService.AddRunJobs for a
// handler's dynamic plan). Run timeouts are the server's maintenance.

func runState(s stintv1.RunState) lifecycle.RunState {
	return lifecycle.RunState(enumName(s.Descriptor(), "RUN_STATE_", protoreflect.EnumNumber(s)))
}

func runStateProto(s lifecycle.RunState) stintv1.RunState {
	return stintv1.RunState(enumNumber(stintv1.RunState(0).Descriptor(), "RUN_STATE_", string(s)))
}

func runOf(p *stintv1.Run) lifecycle.Run {
	if p == nil {
		return lifecycle.Run{}
	}
	return lifecycle.Run{
		ID: p.Id, Tenant: p.Tenant, Name: p.Name, State: runState(p.State), Rev: p.Rev,
		OnFailure: lifecycle.FailurePolicy(enumName(p.OnFailure.Descriptor(), "ON_FAILURE_", protoreflect.EnumNumber(p.OnFailure))),
		Timeout:   lifecycle.Duration(p.Timeout.AsDuration()), TimeoutAt: timePtr(p.TimeoutAt), RerunOf: p.RerunOf,
		ReasonCode: p.ReasonCode, Reason: p.Reason, CreatedAt: timeOf(p.CreatedAt), StartedAt: timePtr(p.StartedAt),
		FinishedAt: timePtr(p.FinishedAt), ReportedAt: timePtr(p.ReportedAt), UpdatedAt: timeOf(p.UpdatedAt),
	}
}

func runView(p *stintv1.RunView) store.RunView {
	if p == nil {
		return store.RunView{}
	}
	v := store.RunView{Run: runOf(p.Run), Jobs: make([]store.RunJob, len(p.Jobs))}
	for i, j := range p.Jobs {
		v.Jobs[i] = store.RunJob{RunID: v.Run.ID, Name: j.Name, JobID: j.JobId, State: state(j.State), DependsOn: j.DependsOn,
			AllowFailure: j.AllowFailure, NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
	}
	return v
}

func runEvent(p *stintv1.RunEvent) lifecycle.RunEvent {
	return lifecycle.RunEvent{
		ID: p.Id, RunID: p.RunId, Rev: p.Rev, Op: lifecycle.RunOp(p.Op),
		Type:      lifecycle.RunEventType(enumName(p.Type.Descriptor(), "RUN_EVENT_TYPE_", protoreflect.EnumNumber(p.Type))),
		FromState: runState(p.FromState), ToState: runState(p.ToState), At: timeOf(p.At), Actor: actor(p.Actor),
		ActorID: p.ActorId, JobID: p.JobId, ReasonCode: p.ReasonCode, Reason: p.Reason, Details: rawOf(p.Details),
	}
}

// runJobs converts the jobs of a run for the wire.
func (s *Store) runJobs(jobs []store.RunJobSpec) ([]*stintv1.RunJobSpec, error) {
	out := make([]*stintv1.RunJobSpec, len(jobs))
	for i, j := range jobs {
		sp, err := spec(j.Spec, s.opts.Tenant)
		if err != nil {
			return nil, err
		}
		out[i] = &stintv1.RunJobSpec{Name: j.Name, Job: sp, DependsOn: j.DependsOn, AllowFailure: j.AllowFailure,
			NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
	}
	return out, nil
}

// RunCreate creates a run on the server. The run's tenant is the token's.
func (s *Store) RunCreate(ctx context.Context, p *store.RunCreateParams) (store.RunView, error) {
	if err := noNow(p.Now); err != nil {
		return store.RunView{}, err
	}
	r := p.Run
	if r.Tenant != "" && r.Tenant != s.opts.Tenant {
		return store.RunView{}, lifecycle.Validationf("run names tenant %q, but over a server the tenant is the token's: leave Tenant empty", r.Tenant)
	}
	if r.RerunOf != "" {
		return store.RunView{}, lifecycle.Validationf("rerun_of is set by the server: use RunRerun")
	}
	if r.OnFailure != "" && r.OnFailure != lifecycle.FailCancel && r.OnFailure != lifecycle.FailContinue {
		return store.RunView{}, lifecycle.Validationf("on_failure %q: expected cancel or continue", r.OnFailure)
	}
	if r.Timeout < 0 {
		return store.RunView{}, lifecycle.Validationf("run timeout %s is negative", r.Timeout)
	}
	jobs, err := s.runJobs(p.Jobs)
	if err != nil {
		return store.RunView{}, err
	}
	req := &stintv1.CreateRunRequest{Id: r.ID, Name: r.Name, Timeout: durOf(r.Timeout), Jobs: jobs,
		OnFailure: stintv1.OnFailure(enumNumber(stintv1.OnFailure(0).Descriptor(), "ON_FAILURE_", string(r.OnFailure)))}
	res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.CreateRun, req)
	if err != nil {
		return store.RunView{}, fromWire(err)
	}
	return runView(res.Run), nil
}

// RunAddJobs adds jobs to the run of the owner's running job, fenced on its
// lease; retried (after a lost reply) with the same request id, it returns
// the run again and adds nothing more.
func (s *Store) RunAddJobs(ctx context.Context, p *store.RunAddJobsParams) (store.RunView, error) {
	if err := noNow(p.Owner.Now); err != nil {
		return store.RunView{}, err
	}
	jobs, err := s.runJobs(p.Jobs)
	if err != nil {
		return store.RunView{}, err
	}
	res, err := callWorker(ctx, s, stintv1connect.WorkerServiceClient.AddRunJobs, &stintv1.AddRunJobsRequest{Owner: owner(p.Owner), Jobs: jobs})
	if err != nil {
		return store.RunView{}, fromWire(err)
	}
	return runView(res.Run), nil
}

// RunCancel cancels a run two-phase on the server.
func (s *Store) RunCancel(ctx context.Context, p *store.RunCancelParams) (store.RunView, error) {
	if err := noNow(p.Now); err != nil {
		return store.RunView{}, err
	}
	res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.CancelRun, &stintv1.CancelRunRequest{Id: p.RunID, Reason: p.Reason})
	if err != nil {
		return store.RunView{}, fromWire(err)
	}
	return runView(res.Run), nil
}

// RunRerun creates a new run from an ended one on the server. The actor
// recorded is the token's name, as for every call over the API.
func (s *Store) RunRerun(ctx context.Context, p *store.RunRerunParams) (store.RunView, error) {
	if err := noNow(p.Now); err != nil {
		return store.RunView{}, err
	}
	res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.RerunRun, &stintv1.RerunRunRequest{Id: p.RunID, FailedOnly: p.FailedOnly})
	if err != nil {
		return store.RunView{}, fromWire(err)
	}
	return runView(res.Run), nil
}

// RunTimeOutDue is the server's maintenance.
func (s *Store) RunTimeOutDue(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"RunTimeOutDue"}
}

// RunGet reads a run of the token's tenant with its jobs.
func (s *Store) RunGet(ctx context.Context, id string) (store.RunView, error) {
	res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.GetRun, &stintv1.GetRunRequest{Id: id})
	if err != nil {
		return store.RunView{}, fromWire(err)
	}
	return runView(res.Run), nil
}

// RunList lists the tenant's runs in id order, paging through the server
// until p.Limit runs (default 100) or the last one.
func (s *Store) RunList(ctx context.Context, p *store.RunListParams) ([]store.Run, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	req := &stintv1.ListRunsRequest{PageToken: p.AfterID}
	for _, st := range p.States {
		n := runStateProto(st)
		if n == stintv1.RunState_RUN_STATE_UNSPECIFIED {
			return nil, lifecycle.Validationf("unknown run state %q: expected one of %v", st, lifecycle.RunStates)
		}
		req.States = append(req.States, n)
	}
	var out []store.Run
	for len(out) < limit {
		req.PageSize = int32(min(limit-len(out), 1000))
		res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.ListRuns, req)
		if err != nil {
			return nil, fromWire(err)
		}
		for _, r := range res.Runs {
			out = append(out, runOf(r))
		}
		if res.NextPageToken == "" {
			break
		}
		req.PageToken = res.NextPageToken
	}
	return out, nil
}

// RunEvents returns a run's own transitions.
func (s *Store) RunEvents(ctx context.Context, id string) ([]store.RunEvent, error) {
	res, err := callRuns(ctx, s, stintv1connect.RunServiceClient.ListRunEvents, &stintv1.ListRunEventsRequest{RunId: id})
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.RunEvent, len(res.Events))
	for i, e := range res.Events {
		out[i] = runEvent(e)
	}
	return out, nil
}

// The webhooks and the outbox, over the admin service (admin tokens of the
// default tenant only). Delivery (claim and report) is the server's.

func webhookOf(p *stintv1.Webhook) store.Webhook {
	return store.Webhook{ID: p.Id, URL: p.Url, Secret: p.Secret, EventTypes: p.EventTypes, Queues: p.Queues,
		Kinds: p.Kinds, Runs: p.Runs, CreatedAt: timeOf(p.CreatedAt)}
}

func outboxOf(p *stintv1.OutboxMessage) store.OutboxMessage {
	m := store.OutboxMessage{ID: p.Id, WebhookID: p.WebhookId, Aggregate: p.Aggregate, AggregateID: p.AggregateId,
		EventType: p.EventType, Payload: rawOf(p.Payload), Attempts: int(p.Attempts), NextAttemptAt: timeOf(p.NextAttemptAt),
		LastError: p.LastError, CreatedAt: timeOf(p.CreatedAt), DeliveredAt: timePtr(p.DeliveredAt),
		State: store.OutboxState(enumName(p.State.Descriptor(), "OUTBOX_STATE_", protoreflect.EnumNumber(p.State)))}
	return m
}

// WebhookAdd adds a subscription on the server.
func (s *Store) WebhookAdd(ctx context.Context, w store.Webhook) (store.Webhook, error) {
	if w.ID != "" || !w.CreatedAt.IsZero() {
		return store.Webhook{}, lifecycle.Validationf("webhook id and created_at are set by the server: leave them empty")
	}
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.AddWebhook, &stintv1.AddWebhookRequest{Webhook: &stintv1.Webhook{
		Url: w.URL, Secret: w.Secret, EventTypes: w.EventTypes, Queues: w.Queues, Kinds: w.Kinds, Runs: w.Runs}})
	if err != nil {
		return store.Webhook{}, fromWire(err)
	}
	return webhookOf(res.Webhook), nil
}

// WebhookList lists the subscriptions.
func (s *Store) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ListWebhooks, &stintv1.ListWebhooksRequest{})
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.Webhook, len(res.Webhooks))
	for i, w := range res.Webhooks {
		out[i] = webhookOf(w)
	}
	return out, nil
}

// WebhookRemove deletes a subscription.
func (s *Store) WebhookRemove(ctx context.Context, id string) error {
	_, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.RemoveWebhook, &stintv1.RemoveWebhookRequest{Id: id})
	return fromWire(err)
}

// WebhookTest has the server send a signed test event to webhook id and
// returns the receiver's status line, such as "200 OK".
func (s *Store) WebhookTest(ctx context.Context, id string) (int, string, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.TestWebhook, &stintv1.TestWebhookRequest{Id: id})
	if err != nil {
		return 0, "", fromWire(err)
	}
	return int(res.StatusCode), res.Status, nil
}

// OutboxList lists outbox messages, paging through the server until
// p.Limit (default 100) or the last one.
func (s *Store) OutboxList(ctx context.Context, p *store.OutboxListParams) ([]store.OutboxMessage, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	req := &stintv1.ListOutboxRequest{AfterId: p.AfterID}
	if p.State != "" {
		if req.State = stintv1.OutboxState(enumNumber(stintv1.OutboxState(0).Descriptor(), "OUTBOX_STATE_", string(p.State))); req.State == 0 {
			return nil, lifecycle.Validationf("outbox state %q: expected pending, delivered or dead", p.State)
		}
	}
	var out []store.OutboxMessage
	for len(out) < limit {
		req.PageSize = int32(min(limit-len(out), 1000))
		res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ListOutbox, req)
		if err != nil {
			return nil, fromWire(err)
		}
		for _, m := range res.Messages {
			out = append(out, outboxOf(m))
		}
		if len(res.Messages) < int(req.PageSize) {
			break
		}
		req.AfterId = res.Messages[len(res.Messages)-1].Id
	}
	return out, nil
}

// OutboxReplay makes a dead message pending again on the server.
func (s *Store) OutboxReplay(ctx context.Context, id int64) (store.OutboxMessage, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ReplayOutbox, &stintv1.ReplayOutboxRequest{Id: id})
	if err != nil {
		return store.OutboxMessage{}, fromWire(err)
	}
	return outboxOf(res.Message), nil
}

// OutboxClaim, OutboxDelivered and OutboxFailed are the server's delivery
// service: it delivers from its own database.

func (s *Store) OutboxClaim(context.Context, *store.OutboxClaimParams) ([]store.OutboxDelivery, error) {
	return nil, &UnsupportedError{"OutboxClaim"}
}
func (s *Store) OutboxDelivered(context.Context, *store.OutboxReportParams) error {
	return &UnsupportedError{"OutboxDelivered"}
}
func (s *Store) OutboxFailed(context.Context, *store.OutboxReportParams) error {
	return &UnsupportedError{"OutboxFailed"}
}
