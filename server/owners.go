package server

import "sync"

// owners remembers the tenant and worker of the jobs this server's claims
// leased, so
// that the owner calls that follow (start, heartbeat, complete, fail ...)
// pass the tenant check without reading the job: one query fewer per call
// on the hot path. A job's tenant never changes, so a remembered one is
// never wrong; a job not remembered (leased through another server, or
// forgotten) is read as before. It holds up to two generations of max jobs.
type owners struct {
	mu        sync.Mutex
	cur, prev map[string]owner // job id → who leased it
	max       int
}

// owner is the tenant a job belongs to and the worker this server leased
// it to.
type owner struct{ tenant, worker string }

func newOwners(max int) *owners {
	return &owners{cur: map[string]owner{}, max: max}
}

// note remembers that job id is tenant's and was leased to worker.
func (o *owners) note(id, tenant, worker string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cur) >= o.max {
		o.prev, o.cur = o.cur, make(map[string]owner, o.max)
	}
	o.cur[id] = owner{tenant, worker}
}

// lookup returns what is remembered of job id.
func (o *owners) lookup(id string) (owner, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.cur[id]
	if !ok {
		w, ok = o.prev[id]
	}
	return w, ok
}

// is reports whether job id is remembered as tenant's.
func (o *owners) is(id, tenant string) bool {
	w, ok := o.lookup(id)
	return ok && w.tenant == tenant
}

// worker returns the worker this server leased job id to; "" when not
// remembered.
func (o *owners) worker(id string) string {
	w, _ := o.lookup(id)
	return w.worker
}
