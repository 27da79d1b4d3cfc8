package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/store"
)

// secretPrefix marks stint tokens, so a leaked one is recognizable (secret
// scanners look for such prefixes).
const secretPrefix = "stint_"

// NewToken makes a token for tenant and role: a random secret of 256 bits
// (crypto/rand), of which only the sha256 is stored. It returns the token
// to store and the secret to hand out once.
func NewToken(tenantName string, role store.Role, name string) (store.Token, string, error) {
	if err := store.ValidTenant(tenantName); err != nil {
		return store.Token{}, "", err
	}
	if !role.Valid() {
		return store.Token{}, "", fmt.Errorf("role %q: expected %s", role, store.Roles)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.Token{}, "", err
	}
	secret := secretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return store.Token{ID: uuid.NewString(), Tenant: tenantName, Role: role, Name: name, Hash: HashSecret(secret)}, secret, nil
}

// HashSecret is what the store keeps of a secret: its sha256 in hex.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// principal is who is calling: the token's id, name, tenant and role.
type principal struct {
	tokenID string
	name    string
	tenant  tenant
	role    store.Role
}

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// roles says which roles may call each service. Admins may call every one.
// A reader may call only readMethods.
var roles = map[string][]store.Role{
	stintv1connect.JobServiceName:    {store.RoleAdmin, store.RoleClient},
	stintv1connect.RunServiceName:    {store.RoleAdmin, store.RoleClient},
	stintv1connect.WorkerServiceName: {store.RoleAdmin, store.RoleWorker},
	stintv1connect.AdminServiceName:  {store.RoleAdmin},
}

// readMethods are the procedures that only read the caller's tenant's
// data: what a reader token may call. Tokens, webhooks (their secrets),
// the outbox and schedules (the whole database's) stay an admin's, and a
// worker's reads (GetSteps, GetSignal) need the lease it holds.
var readMethods = map[string]bool{
	stintv1connect.JobServiceGetJobProcedure:        true,
	stintv1connect.JobServiceListJobsProcedure:      true,
	stintv1connect.JobServiceListEventsProcedure:    true,
	stintv1connect.JobServiceListStepsProcedure:     true,
	stintv1connect.RunServiceGetRunProcedure:        true,
	stintv1connect.RunServiceListRunsProcedure:      true,
	stintv1connect.RunServiceListRunEventsProcedure: true,
	stintv1connect.AdminServiceQueueDepthProcedure:  true,
	stintv1connect.AdminServiceDeadLettersProcedure: true,
	stintv1connect.AdminServiceListQueuesProcedure:  true,
}

// permits reports whether role may call procedure of service; when not, it
// says which roles may.
func permits(role store.Role, service, procedure string) (bool, string) {
	allowed := roles[service]
	if role == store.RoleReader && readMethods[procedure] || slices.Contains(allowed, role) {
		return true, ""
	}
	need := make([]string, len(allowed))
	for i, r := range allowed {
		need[i] = string(r)
	}
	return false, strings.Join(need, " or ")
}

// authenticate wraps the API: a request without a live bearer token is
// refused with 401 before its body is read, a token whose role may not call
// the service with 403. With noAuth every request acts as an admin of the
// default tenant.
func authenticate(tokens store.Tokens, noAuth bool, next http.Handler) http.Handler {
	errw := connect.NewErrorWriter()
	fail := func(w http.ResponseWriter, r *http.Request, code connect.Code, msg string) {
		_ = errw.Write(w, r, connect.NewError(code, errors.New(msg)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service := strings.Trim(r.URL.Path, "/")
		if i := strings.LastIndexByte(service, '/'); i >= 0 {
			service = service[:i]
		}
		if _, known := roles[service]; !known {
			http.NotFound(w, r)
			return
		}
		p := principal{tokenID: "none", name: "anonymous", tenant: tenant{DefaultTenant}, role: store.RoleAdmin}
		if !noAuth {
			secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || secret == "" {
				fail(w, r, connect.CodeUnauthenticated, "missing bearer token: send \"Authorization: Bearer <token>\" (create one with `stint tokens create`)")
				return
			}
			t, err := tokens.TokenByHash(r.Context(), HashSecret(strings.TrimSpace(secret)))
			if errors.Is(err, store.ErrNotFound) {
				fail(w, r, connect.CodeUnauthenticated, "unknown or revoked token")
				return
			}
			if err != nil {
				fail(w, r, connect.CodeUnavailable, "cannot check the token: "+err.Error())
				return
			}
			name := t.Name
			if name == "" {
				name = t.ID
			}
			p = principal{tokenID: t.ID, name: name, tenant: tenant{t.Tenant}, role: t.Role}
		}
		if ok, need := permits(p.role, service, "/"+strings.Trim(r.URL.Path, "/")); !ok {
			fail(w, r, connect.CodePermissionDenied, fmt.Sprintf("a %s token may not call %s: it needs an %s token", p.role, strings.Trim(r.URL.Path, "/"), need))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}
