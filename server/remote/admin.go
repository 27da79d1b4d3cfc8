package remote

import (
	"context"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

// Queue controls, schedules and tokens over the admin service, so `stint
// queues`, `stint cron` and `stint tokens` work against a server as they do
// against a database (store.Queues, store.Schedules and store.TokensOf find
// them). The server checks the token's role and tenant: queue controls act
// on the token's tenant's queues; schedules, kind limits and other
// tenants' tokens need an admin of the default tenant.

var (
	_ store.QueueStore    = (*Store)(nil)
	_ store.ScheduleStore = (*Store)(nil)
	_ store.Tokens        = (*Store)(nil)
)

func queueSettingsOf(p *stintv1.QueueSettings) store.QueueSettings {
	q := store.QueueSettings{Name: p.GetName(), Paused: p.GetPaused(), MaxRunning: int(p.GetMaxRunning()), RateLimit: int(p.GetRateLimit()),
		RateInterval: p.GetRateInterval().AsDuration(), FairTenants: p.GetFairTenants(), KeyLimit: int(p.GetKeyLimit()), UpdatedAt: timeOf(p.GetUpdatedAt()),
		Defaults: store.SpecDefaults{MaxAttempts: int(p.GetDefaultMaxAttempts()), Timeout: p.GetDefaultTimeout().AsDuration(), Priority: int(p.GetDefaultPriority()),
			BackoffBase: p.GetDefaultBackoffBase().AsDuration(), BackoffFactor: p.GetDefaultBackoffFactor(), BackoffMax: p.GetDefaultBackoffMax().AsDuration()}}
	if len(p.GetWeights()) > 0 {
		q.Weights = map[string]int{}
		for k, v := range p.GetWeights() {
			q.Weights[k] = int(v)
		}
	}
	return q
}

// QueueInfo describes the token's tenant's queues.
func (s *Store) QueueInfo(ctx context.Context) ([]store.QueueInfo, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ListQueues, &stintv1.ListQueuesRequest{})
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.QueueInfo, len(res.Queues))
	for i, q := range res.Queues {
		out[i] = store.QueueInfo{QueueSettings: queueSettingsOf(q.Settings), Running: int(q.Running),
			OldestWaiting: q.OldestWaiting.AsDuration(), Unserved: q.Unserved, Jobs: map[lifecycle.State]int{}}
		for st, n := range q.Jobs {
			out[i].Jobs[lifecycle.State(st)] = int(n)
		}
	}
	return out, nil
}

// QueueSettingsList returns the settings of the token's tenant's queues
// that have any (read through ListQueues).
func (s *Store) QueueSettingsList(ctx context.Context) ([]store.QueueSettings, error) {
	info, err := s.QueueInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.QueueSettings
	for _, q := range info {
		if q.Limited() || !q.UpdatedAt.IsZero() {
			out = append(out, q.QueueSettings)
		}
	}
	return out, nil
}

// QueuePause pauses or resumes a queue on every node.
func (s *Store) QueuePause(ctx context.Context, name string, paused bool) (store.QueueSettings, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.PauseQueue, &stintv1.PauseQueueRequest{Name: name, Paused: paused})
	if err != nil {
		return store.QueueSettings{}, fromWire(err)
	}
	return queueSettingsOf(res.Queue), nil
}

// QueueLimit sets a queue's limits (name may be store.KindLimitName(K)).
func (s *Store) QueueLimit(ctx context.Context, name string, l store.QueueLimits) (store.QueueSettings, error) {
	req := &stintv1.LimitQueueRequest{Name: name, RateInterval: durPtr(l.RateInterval), FairTenants: l.FairTenants,
		MaxRunning: int32Ptr(l.MaxRunning), RateLimit: int32Ptr(l.RateLimit), KeyLimit: int32Ptr(l.KeyLimit),
		DefaultMaxAttempts: int32Ptr(l.DefaultMaxAttempts), DefaultTimeout: durPtr(l.DefaultTimeout), DefaultPriority: int32Ptr(l.DefaultPriority),
		DefaultBackoffBase: durPtr(l.DefaultBackoffBase), DefaultBackoffFactor: l.DefaultBackoffFactor, DefaultBackoffMax: durPtr(l.DefaultBackoffMax)}
	if l.Weights != nil {
		req.SetWeights, req.Weights = true, map[string]int32{}
		for k, v := range l.Weights {
			req.Weights[k] = int32(v)
		}
	}
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.LimitQueue, req)
	if err != nil {
		return store.QueueSettings{}, fromWire(err)
	}
	return queueSettingsOf(res.Queue), nil
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(min(max(*p, -1), 1<<31-1)) // the server refuses what is out of range
	return &v
}

func durPtr(d *time.Duration) *durationpb.Duration {
	if d == nil {
		return nil
	}
	return durationpb.New(*d)
}

func scheduleOf(p *stintv1.Schedule) store.Schedule {
	return store.Schedule{Name: p.Name, Expr: p.Expr, TimeZone: p.TimeZone, Missed: p.Missed, Kind: p.Kind, Queue: p.Queue,
		Tenant: p.Tenant, Priority: int(p.Priority), Payload: rawOf(p.Payload), MaxAttempts: int(p.MaxAttempts),
		Timeout: p.Timeout.AsDuration(), Paused: p.Paused, LastTick: timePtr(p.LastTick), CreatedAt: timeOf(p.CreatedAt), UpdatedAt: timeOf(p.UpdatedAt)}
}

// SchedulePut creates or redefines a schedule on the server.
func (s *Store) SchedulePut(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	payload, err := valueOf("payload", sc.Payload)
	if err != nil {
		return store.Schedule{}, err
	}
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.PutSchedule, &stintv1.PutScheduleRequest{Schedule: &stintv1.Schedule{
		Name: sc.Name, Expr: sc.Expr, TimeZone: sc.TimeZone, Missed: sc.Missed, Kind: sc.Kind, Queue: sc.Queue, Tenant: sc.Tenant,
		Priority: int32(sc.Priority), Payload: payload, MaxAttempts: int32(sc.MaxAttempts), Timeout: durOf(sc.Timeout), Paused: sc.Paused}})
	if err != nil {
		return store.Schedule{}, fromWire(err)
	}
	return scheduleOf(res.Schedule), nil
}

// ScheduleList lists the schedules by name.
func (s *Store) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ListSchedules, &stintv1.ListSchedulesRequest{})
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.Schedule, len(res.Schedules))
	for i, sc := range res.Schedules {
		out[i] = scheduleOf(sc)
	}
	return out, nil
}

// ScheduleGet returns one schedule (read through ListSchedules).
func (s *Store) ScheduleGet(ctx context.Context, name string) (store.Schedule, error) {
	all, err := s.ScheduleList(ctx)
	if err != nil {
		return store.Schedule{}, err
	}
	for _, sc := range all {
		if sc.Name == name {
			return sc, nil
		}
	}
	return store.Schedule{}, &Error{Kind: store.ErrNotFound, Msg: "schedule " + name + ": not found: list them with `stint cron ls`"}
}

// ScheduleDelete removes a schedule.
func (s *Store) ScheduleDelete(ctx context.Context, name string) error {
	_, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.DeleteSchedule, &stintv1.DeleteScheduleRequest{Name: name})
	return fromWire(err)
}

// SchedulePause pauses or resumes a schedule.
func (s *Store) SchedulePause(ctx context.Context, name string, paused bool) (store.Schedule, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.PauseSchedule, &stintv1.PauseScheduleRequest{Name: name, Paused: paused})
	if err != nil {
		return store.Schedule{}, fromWire(err)
	}
	return scheduleOf(res.Schedule), nil
}

// ScheduleFire is the server's cron service's.
func (s *Store) ScheduleFire(context.Context, *store.ScheduleFireParams) (store.EnqueueResult, bool, error) {
	return store.EnqueueResult{}, false, &UnsupportedError{"ScheduleFire"}
}

func tokenOf(p *stintv1.Token) store.Token {
	return store.Token{ID: p.Id, Tenant: p.Tenant, Name: p.Name, CreatedAt: timeOf(p.CreatedAt), RevokedAt: timePtr(p.RevokedAt),
		Role: store.Role(enumName(p.Role.Descriptor(), "ROLE_", protoreflect.EnumNumber(p.Role)))}
}

// TokenCreate stores t on the server: its tenant, role, name and the hash
// of a secret the caller made (which never crosses the network). The
// server chooses the id.
func (s *Store) TokenCreate(ctx context.Context, t store.Token) (store.Token, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.CreateToken, &stintv1.CreateTokenRequest{
		Tenant: t.Tenant, Name: t.Name, Hash: t.Hash,
		Role: stintv1.Role(enumNumber(stintv1.Role(0).Descriptor(), "ROLE_", string(t.Role)))})
	if err != nil {
		return store.Token{}, fromWire(err)
	}
	return tokenOf(res.Token), nil
}

// TokenByHash is the server's own: it checks tokens against its database.
func (s *Store) TokenByHash(context.Context, string) (store.Token, error) {
	return store.Token{}, &UnsupportedError{"TokenByHash"}
}

// TokenList lists tokens: the token's tenant's, or for an admin of the
// default tenant every tenant's (or tenant's when named).
func (s *Store) TokenList(ctx context.Context, tenant string) ([]store.Token, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.ListTokens, &stintv1.ListTokensRequest{Tenant: tenant})
	if err != nil {
		return nil, fromWire(err)
	}
	out := make([]store.Token, len(res.Tokens))
	for i, t := range res.Tokens {
		out[i] = tokenOf(t)
	}
	return out, nil
}

// TokenRevoke revokes a token the caller's token may manage; tenant is
// decided by the server from the caller's token.
func (s *Store) TokenRevoke(ctx context.Context, _ string, id string) (store.Token, error) {
	res, err := callAdmin(ctx, s, stintv1connect.AdminServiceClient.RevokeToken, &stintv1.RevokeTokenRequest{Id: id})
	if err != nil {
		return store.Token{}, fromWire(err)
	}
	return tokenOf(res.Token), nil
}
