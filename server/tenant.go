package server

import (
	"strings"

	"github.com/stint-dev/stint/store"
)

// DefaultTenant is the tenant whose jobs are the store's un-namespaced ones:
// the jobs that `stint enqueue`, the Go client and the in-process pool see
// (tenant "" in the store, queue names as given). `stint dev` hands out a
// token of this tenant.
const DefaultTenant = "default"

// tenant is the caller's tenant, taken from its token and nothing else.
//
// The store claims from queues without looking at tenants, so the server
// keeps tenants apart by namespacing their queues in the store: tenant acme's
// queue "emails" is the store's queue "acme/emails". Every read is also
// checked against the job's tenant column. The default tenant keeps plain
// queue names so the server and local tools share one namespace.
type tenant struct {
	name string // the API name, as in the token
}

// store is the tenant as the store records it on jobs.
func (t tenant) store() string {
	if t.name == DefaultTenant {
		return ""
	}
	return t.name
}

// storeQueue is the store's name for the tenant's queue q.
func (t tenant) storeQueue(q string) string {
	if t.name == DefaultTenant || q == "" {
		return q
	}
	return t.name + "/" + q
}

// apiQueue is the tenant's name for the store's queue q.
func (t tenant) apiQueue(q string) string {
	if t.name == DefaultTenant {
		return q
	}
	return strings.TrimPrefix(q, t.name+"/")
}

// owns reports whether j belongs to the tenant. A job of another tenant is
// answered exactly like a job that does not exist.
func (t tenant) owns(j store.Job) bool {
	if j.Tenant != t.store() {
		return false
	}
	return t.name == DefaultTenant || strings.HasPrefix(j.Queue, t.name+"/")
}

// ownsQueue reports whether the store's queue q is one of the tenant's.
func (t tenant) ownsQueue(q string) bool {
	if t.name == DefaultTenant {
		return !strings.Contains(q, "/")
	}
	return strings.HasPrefix(q, t.name+"/")
}

// scopeRequest namespaces a request id by tenant: the store looks enqueue and
// claim request ids up across all jobs, and one tenant's id must never
// return another's jobs.
func (t tenant) scopeRequest(id string) string {
	if id == "" || t.name == DefaultTenant {
		return id
	}
	return t.name + "/" + id
}
