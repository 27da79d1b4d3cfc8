package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// viewer is who is looking: a token's tenant and role.
type viewer struct {
	tenant string // the API name: "default" is the store's un-namespaced jobs
	role   store.Role
	name   string
}

type viewerKey struct{}

func viewerOf(ctx context.Context) viewer { v, _ := ctx.Value(viewerKey{}).(viewer); return v }

// mayCancel and mayReplay follow the API's roles: clients may cancel their
// jobs, only admins replay dead letters.
func (v viewer) mayCancel() bool { return v.role == store.RoleAdmin || v.role == store.RoleClient }
func (v viewer) mayReplay() bool { return v.role == store.RoleAdmin }

// mayPause follows `stint queues pause`: queue controls are an admin's.
func (v viewer) mayPause() bool { return v.role == store.RoleAdmin }

// storeTenant is the tenant as the store records it on jobs.
func (v viewer) storeTenant() string {
	if v.tenant == server.DefaultTenant {
		return ""
	}
	return v.tenant
}

// owns reports whether j is the viewer's tenant's, as the API decides.
func (v viewer) owns(j store.Job) bool {
	if j.Tenant != v.storeTenant() {
		return false
	}
	return v.tenant == server.DefaultTenant || strings.HasPrefix(j.Queue, v.tenant+"/")
}

// ownsQueue reports whether the store's queue q is the viewer's tenant's.
func (v viewer) ownsQueue(q string) bool {
	if v.tenant == server.DefaultTenant {
		return !strings.Contains(q, "/")
	}
	return strings.HasPrefix(q, v.tenant+"/")
}

// authenticate admits requests with a live bearer token of an admin, a
// client or a reader (who sees what a client sees and changes nothing);
// worker tokens only claim and report, as on the API.
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := viewer{tenant: server.DefaultTenant, role: store.RoleAdmin, name: "anonymous"}
		if !h.cfg.NoAuth {
			secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || strings.TrimSpace(secret) == "" {
				writeError(w, http.StatusUnauthorized, "missing bearer token: enter an admin, client or reader token (create one with `stint tokens create`)")
				return
			}
			t, err := h.cfg.Tokens.TokenByHash(r.Context(), server.HashSecret(strings.TrimSpace(secret)))
			if errors.Is(err, store.ErrNotFound) {
				writeError(w, http.StatusUnauthorized, "unknown or revoked token")
				return
			}
			if err != nil {
				writeError(w, http.StatusServiceUnavailable, "cannot check the token: "+err.Error())
				return
			}
			v = viewer{tenant: t.Tenant, role: t.Role, name: t.Name}
			if v.name == "" {
				v.name = t.ID
			}
		}
		if v.role != store.RoleAdmin && v.role != store.RoleClient && v.role != store.RoleReader {
			writeError(w, http.StatusForbidden, "a "+string(v.role)+" token may not use the dashboard: use an admin, client or reader token")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

type permission int

const (
	roleCancel permission = iota
	roleReplay
	rolePause
)

// mutate guards a change: refused in read-only mode and to roles that may
// not make it.
func (h *handler) mutate(p permission, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r.Context())
		switch {
		case h.cfg.ReadOnly:
			writeError(w, http.StatusForbidden, "the dashboard is read-only")
		case p == roleCancel && !v.mayCancel():
			writeError(w, http.StatusForbidden, "a "+string(v.role)+" token may not do this: it needs an admin or client token")
		case p == roleReplay && !v.mayReplay(), p == rolePause && !v.mayPause():
			writeError(w, http.StatusForbidden, "a "+string(v.role)+" token may not do this: it needs an admin token")
		default:
			next(w, r)
		}
	}
}
