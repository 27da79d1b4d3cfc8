package server

import (
	"context"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// Queue controls over the API act on the caller's tenant's queues, which
// the store names with the tenant's prefix (tenant.storeQueue). A kind's
// rate limit ("kind:K") holds in every queue of every tenant, so only an
// admin of the default tenant may set one.

// kindLimitPrefix is how store.KindLimitName names a kind's settings row.
var kindLimitPrefix = store.KindLimitName("")

func (h *admin) queues() (store.QueueStore, error) {
	qs, err := store.Queues(h.s)
	if err != nil {
		return nil, toConnect(err)
	}
	return qs, nil
}

// storeQueueName checks the API's name of a queue (or "kind:K") and
// returns the store's, refusing a kind limit to a tenant's admin.
func storeQueueName(ctx context.Context, name string) (string, error) {
	t := principalOf(ctx).tenant
	if kind, ok := strings.CutPrefix(name, kindLimitPrefix); ok {
		if t.name != DefaultTenant {
			return "", connect.NewError(connect.CodePermissionDenied, errorf(
				"a kind's rate limit holds in every tenant's queues: use an admin token of the %q tenant", DefaultTenant))
		}
		if err := checkName("kind", kind); err != nil {
			return "", err
		}
		return name, nil
	}
	if err := checkName("queue", name); err != nil {
		return "", err
	}
	if err := queueName("queue", name); err != nil {
		return "", err
	}
	return t.storeQueue(name), nil
}

func queueSettingsToProto(t tenant, q store.QueueSettings) *stintv1.QueueSettings {
	out := &stintv1.QueueSettings{
		Name: t.apiQueue(q.Name), Paused: q.Paused, MaxRunning: int32(q.MaxRunning), RateLimit: int32(q.RateLimit),
		RateInterval: dur(q.RateInterval), FairTenants: q.FairTenants, KeyLimit: int32(q.KeyLimit), UpdatedAt: ts(q.UpdatedAt),
		DefaultMaxAttempts: int32(q.Defaults.MaxAttempts), DefaultPriority: int32(q.Defaults.Priority),
	}
	if q.Defaults.Timeout > 0 {
		out.DefaultTimeout = dur(q.Defaults.Timeout)
	}
	if q.Defaults.BackoffBase > 0 {
		out.DefaultBackoffBase = dur(q.Defaults.BackoffBase)
	}
	if q.Defaults.BackoffMax > 0 {
		out.DefaultBackoffMax = dur(q.Defaults.BackoffMax)
	}
	out.DefaultBackoffFactor = q.Defaults.BackoffFactor
	if len(q.Weights) > 0 {
		out.Weights = map[string]int32{}
		for k, v := range q.Weights {
			out.Weights[k] = int32(v)
		}
	}
	return out
}

// ListQueues describes the tenant's queues.
func (h *admin) ListQueues(ctx context.Context, _ *connect.Request[stintv1.ListQueuesRequest]) (*connect.Response[stintv1.ListQueuesResponse], error) {
	qs, err := h.queues()
	if err != nil {
		return nil, err
	}
	info, err := qs.QueueInfo(ctx)
	if err != nil {
		return nil, toConnect(err)
	}
	t := principalOf(ctx).tenant
	out := &stintv1.ListQueuesResponse{}
	for _, q := range info {
		if !t.ownsQueue(q.Name) {
			continue
		}
		qi := &stintv1.QueueInfo{Settings: queueSettingsToProto(t, q.QueueSettings), Running: int64(q.Running),
			OldestWaiting: dur(q.OldestWaiting), Unserved: q.Unserved, Jobs: map[string]int64{}}
		for s, n := range q.Jobs {
			qi.Jobs[string(s)] = int64(n)
		}
		out.Queues = append(out.Queues, qi)
	}
	return connect.NewResponse(out), nil
}

// PauseQueue pauses or resumes one of the tenant's queues.
func (h *admin) PauseQueue(ctx context.Context, req *connect.Request[stintv1.PauseQueueRequest]) (*connect.Response[stintv1.PauseQueueResponse], error) {
	name, err := storeQueueName(ctx, req.Msg.Name)
	if err != nil {
		return nil, err
	}
	qs, err := h.queues()
	if err != nil {
		return nil, err
	}
	q, err := qs.QueuePause(ctx, name, req.Msg.Paused)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.PauseQueueResponse{Queue: queueSettingsToProto(principalOf(ctx).tenant, q)}), nil
}

// LimitQueue changes the limits of one of the tenant's queues, or (default
// tenant only) a kind's rate limit.
func (h *admin) LimitQueue(ctx context.Context, req *connect.Request[stintv1.LimitQueueRequest]) (*connect.Response[stintv1.LimitQueueResponse], error) {
	m := req.Msg
	name, err := storeQueueName(ctx, m.Name)
	if err != nil {
		return nil, err
	}
	l, err := queueLimitsFromProto(m)
	if err != nil {
		return nil, err
	}
	qs, err := h.queues()
	if err != nil {
		return nil, err
	}
	q, err := qs.QueueLimit(ctx, name, l)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.LimitQueueResponse{Queue: queueSettingsToProto(principalOf(ctx).tenant, q)}), nil
}

func queueLimitsFromProto(m *stintv1.LimitQueueRequest) (store.QueueLimits, error) {
	var l store.QueueLimits
	ints := []struct {
		field string
		v     *int32
		dst   **int
	}{{"max_running", m.MaxRunning, &l.MaxRunning}, {"rate_limit", m.RateLimit, &l.RateLimit}, {"key_limit", m.KeyLimit, &l.KeyLimit},
		{"default_max_attempts", m.DefaultMaxAttempts, &l.DefaultMaxAttempts}}
	for _, f := range ints {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return l, invalid("%s %d is negative: use 0 for no limit", f.field, *f.v)
		}
		n := int(*f.v)
		*f.dst = &n
	}
	if m.RateInterval != nil {
		if err := checkDuration("rate_interval", m.RateInterval); err != nil {
			return l, err
		}
		d := m.RateInterval.AsDuration()
		l.RateInterval = &d
	}
	if m.DefaultTimeout != nil {
		if err := checkDuration("default_timeout", m.DefaultTimeout); err != nil {
			return l, err
		}
		d := m.DefaultTimeout.AsDuration()
		l.DefaultTimeout = &d
	}
	if m.DefaultPriority != nil {
		p := int(*m.DefaultPriority) // the store checks the range
		l.DefaultPriority = &p
	}
	for _, f := range []struct {
		field string
		v     *durationpb.Duration
		dst   **time.Duration
	}{{"default_backoff_base", m.DefaultBackoffBase, &l.DefaultBackoffBase}, {"default_backoff_max", m.DefaultBackoffMax, &l.DefaultBackoffMax}} {
		if f.v == nil {
			continue
		}
		if err := checkDuration(f.field, f.v); err != nil {
			return l, err
		}
		d := f.v.AsDuration()
		*f.dst = &d
	}
	l.DefaultBackoffFactor = m.DefaultBackoffFactor // the store checks the range
	l.FairTenants = m.FairTenants
	if m.SetWeights {
		if len(m.Weights) > MaxBatch {
			return l, invalid("weights has %d tenants: the limit is %d", len(m.Weights), MaxBatch)
		}
		l.Weights = map[string]int{}
		for k, v := range m.Weights {
			l.Weights[k] = int(v)
		}
	}
	return l, nil
}
