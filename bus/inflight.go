package bus

import (
	"sync"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// inflight is what this bridge has out with bus workers: each dispatched
// job until its result comes back or its lease runs out. Dispatch claims
// no more than MaxDispatched of them, so results never queue up behind
// dispatches long enough for the leases to expire.
//
// It also keeps each job as its dispatch (or its last heartbeat) left it:
// the record a SUCCEEDED result completes without reading the row first
// (store.JobCompleteParams.Held; the store writes it only where the row is
// still at that revision, and judges the row otherwise).
type inflight struct {
	mu    sync.Mutex
	jobs  map[string]outJob
	freed chan struct{} // a slot came free
}

// outJob is one job out with a bus worker.
type outJob struct {
	until time.Time     // its lease expiry
	held  lifecycle.Job // as the store last returned it; zero ID when unknown
}

func newInflight() *inflight {
	return &inflight{jobs: map[string]outJob{}, freed: make(chan struct{}, 1)}
}

// maxHeldBytes bounds the payload a kept record may carry: a job with more
// is read when its result comes (MaxDispatched records of up to 1 MiB each
// would be gigabytes).
const maxHeldBytes = 16 << 10

// keepable is j as the record to keep, or a zero job when it is too large.
func keepable(j lifecycle.Job) lifecycle.Job {
	if len(j.Payload)+len(j.Checkpoint)+len(j.Result) > maxHeldBytes {
		return lifecycle.Job{}
	}
	return j
}

// add records a dispatched job (or a renewed lease) until its lease
// expiry, with the record the store returned for it.
func (f *inflight) add(j lifecycle.Job, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[j.ID] = outJob{until: until, held: keepable(j)}
}

// refresh replaces the record of a job still out (a RUNNING result moved
// it on); a job not out is left so.
func (f *inflight) refresh(j lifecycle.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.jobs[j.ID]; ok {
		o.held = keepable(j)
		f.jobs[j.ID] = o
	}
}

// held is the record of job id as the store last returned it, if it is out.
func (f *inflight) held(id string) (lifecycle.Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.jobs[id]
	return o.held, ok && o.held.ID == id
}

// done frees a job's slot.
func (f *inflight) done(id string) {
	f.mu.Lock()
	_, ok := f.jobs[id]
	delete(f.jobs, id)
	f.mu.Unlock()
	if ok {
		select {
		case f.freed <- struct{}{}:
		default:
		}
	}
}

// room is how many more jobs may go out at now, forgetting the jobs whose
// lease ran out (the reaper takes them back).
func (f *inflight) room(now time.Time, max int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, o := range f.jobs {
		if !now.Before(o.until) {
			delete(f.jobs, id)
		}
	}
	return max - len(f.jobs)
}

// size is how many jobs are out now.
func (f *inflight) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}
