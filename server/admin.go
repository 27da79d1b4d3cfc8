package server

import (
	"context"
	"sort"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// admin serves AdminService: tokens and counts, within the caller's tenant.
type admin struct{ *service }

func tokenToProto(t store.Token) *stintv1.Token {
	return &stintv1.Token{
		Id: t.ID, Tenant: t.Tenant, Name: t.Name, CreatedAt: ts(t.CreatedAt), RevokedAt: tsPtr(t.RevokedAt),
		Role: stintv1.Role(enumOf(stintv1.Role(0).Descriptor(), "ROLE_", string(t.Role))),
	}
}

func (h *admin) keeper() (store.Tokens, error) {
	if h.tokens == nil {
		return nil, toConnect(store.ErrUnsupported)
	}
	return h.tokens, nil
}

// CreateToken makes a token of the caller's tenant, or of the tenant it
// names when the caller is an admin of the default tenant. With a hash the
// caller made the secret, which then never crosses the network.
func (h *admin) CreateToken(ctx context.Context, req *connect.Request[stintv1.CreateTokenRequest]) (*connect.Response[stintv1.CreateTokenResponse], error) {
	m := req.Msg
	role, ok := nameOf(m.Role.Descriptor(), "ROLE_", protoreflect.EnumNumber(m.Role))
	if !ok {
		return nil, invalid("role %d: expected ROLE_ADMIN, ROLE_CLIENT, ROLE_WORKER or ROLE_READER", m.Role)
	}
	if err := checkText("name", m.Name, MaxNameBytes); err != nil {
		return nil, err
	}
	tenantName, err := tokenTenant(ctx, m.Tenant)
	if err != nil {
		return nil, err
	}
	keeper, err := h.keeper()
	if err != nil {
		return nil, err
	}
	t, secret, err := NewToken(tenantName, store.Role(role), m.Name)
	if err != nil {
		return nil, toConnect(err)
	}
	if m.Hash != "" {
		if !validHash(m.Hash) {
			return nil, invalid("hash: expected the 64 hex digits of the sha256 of the secret")
		}
		t.Hash, secret = m.Hash, ""
	}
	if t, err = keeper.TokenCreate(ctx, t); err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.CreateTokenResponse{Token: tokenToProto(t), Secret: secret}), nil
}

// tokenTenant is the tenant a token call acts on: the caller's, or for an
// admin of the default tenant (the operator of the whole server) the one
// it names; "" for such an admin listing or revoking means every tenant's.
func tokenTenant(ctx context.Context, named string) (string, error) {
	p := principalOf(ctx)
	if named == "" || named == p.tenant.name {
		return p.tenant.name, nil
	}
	if p.tenant.name != DefaultTenant {
		return "", connect.NewError(connect.CodePermissionDenied, errorf(
			"a token of tenant %q may not manage tenant %q's tokens", p.tenant.name, named))
	}
	if err := store.ValidTenant(named); err != nil {
		return "", invalid("tenant: %v", err)
	}
	return named, nil
}

// everyTenant is the tenant filter of a list or revoke: an admin of the
// default tenant sees every tenant's tokens unless it names one.
func everyTenant(ctx context.Context, named string) (string, error) {
	if named == "" && principalOf(ctx).tenant.name == DefaultTenant {
		return "", nil
	}
	return tokenTenant(ctx, named)
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// ListTokens lists the tenant's tokens (an admin of the default tenant:
// every tenant's, or the one it names).
func (h *admin) ListTokens(ctx context.Context, req *connect.Request[stintv1.ListTokensRequest]) (*connect.Response[stintv1.ListTokensResponse], error) {
	tenantName, err := everyTenant(ctx, req.Msg.Tenant)
	if err != nil {
		return nil, err
	}
	keeper, err := h.keeper()
	if err != nil {
		return nil, err
	}
	ts, err := keeper.TokenList(ctx, tenantName)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListTokensResponse{}
	for _, t := range ts {
		out.Tokens = append(out.Tokens, tokenToProto(t))
	}
	return connect.NewResponse(out), nil
}

// RevokeToken revokes one of the tenant's tokens (an admin of the default
// tenant: any tenant's). Another tenant's token is answered as not found.
func (h *admin) RevokeToken(ctx context.Context, req *connect.Request[stintv1.RevokeTokenRequest]) (*connect.Response[stintv1.RevokeTokenResponse], error) {
	if err := checkName("id", req.Msg.Id); err != nil {
		return nil, err
	}
	keeper, err := h.keeper()
	if err != nil {
		return nil, err
	}
	tenantName, err := everyTenant(ctx, "")
	if err != nil {
		return nil, err
	}
	t, err := keeper.TokenRevoke(ctx, tenantName, req.Msg.Id)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.RevokeTokenResponse{Token: tokenToProto(t)}), nil
}

// scan calls fn on each of the tenant's jobs in the given states. The store
// has no count query, so this reads the jobs page by page: fine for queues
// of thousands, slow for millions.
func (h *admin) scan(ctx context.Context, states []lifecycle.State, fn func(store.Job)) error {
	t := principalOf(ctx).tenant
	q := store.JobListParams{States: states, Limit: store.MaxBatch}
	for {
		page, err := h.s.JobList(ctx, &q)
		if err != nil {
			return toConnect(err)
		}
		for _, j := range page {
			if t.owns(j) {
				fn(j)
			}
		}
		if len(page) < q.Limit {
			return nil
		}
		q.AfterID = page[len(page)-1].ID
	}
}

// QueueDepth counts the tenant's live jobs by queue and state.
func (h *admin) QueueDepth(ctx context.Context, _ *connect.Request[stintv1.QueueDepthRequest]) (*connect.Response[stintv1.QueueDepthResponse], error) {
	t := principalOf(ctx).tenant
	var live []lifecycle.State
	for _, s := range lifecycle.States {
		if !s.Terminal() {
			live = append(live, s)
		}
	}
	type key struct {
		queue string
		state lifecycle.State
	}
	counts := map[key]int64{}
	if err := h.scan(ctx, live, func(j store.Job) { counts[key{t.apiQueue(j.Queue), j.State}]++ }); err != nil {
		return nil, err
	}
	out := &stintv1.QueueDepthResponse{}
	for k, n := range counts {
		out.Counts = append(out.Counts, &stintv1.QueueStateCount{Queue: k.queue, State: stateToProto(k.state), Count: n})
	}
	sort.Slice(out.Counts, func(i, j int) bool {
		a, b := out.Counts[i], out.Counts[j]
		return a.Queue < b.Queue || (a.Queue == b.Queue && a.State < b.State)
	})
	return connect.NewResponse(out), nil
}

// DeadLetters counts the tenant's dead-lettered jobs by reason code.
func (h *admin) DeadLetters(ctx context.Context, _ *connect.Request[stintv1.DeadLettersRequest]) (*connect.Response[stintv1.DeadLettersResponse], error) {
	counts := map[string]int64{}
	if err := h.scan(ctx, []lifecycle.State{lifecycle.DeadLettered}, func(j store.Job) { counts[j.ReasonCode]++ }); err != nil {
		return nil, err
	}
	out := &stintv1.DeadLettersResponse{}
	for code, n := range counts {
		out.Reasons = append(out.Reasons, &stintv1.ReasonCount{ReasonCode: code, Count: n})
	}
	sort.Slice(out.Reasons, func(i, j int) bool { return out.Reasons[i].ReasonCode < out.Reasons[j].ReasonCode })
	return connect.NewResponse(out), nil
}
