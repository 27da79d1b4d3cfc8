package bus

import (
	"sync"
	"time"
)

// inflight is what this bridge has out with bus workers: each dispatched
// job until its result comes back or its lease runs out. Dispatch claims
// no more than MaxDispatched of them, so results never queue up behind
// dispatches long enough for the leases to expire.
type inflight struct {
	mu    sync.Mutex
	jobs  map[string]time.Time // job id → lease expiry
	freed chan struct{}        // a slot came free
}

func newInflight() *inflight {
	return &inflight{jobs: map[string]time.Time{}, freed: make(chan struct{}, 1)}
}

// add records a dispatched job (or a renewed lease) until its lease expiry.
func (f *inflight) add(id string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[id] = until
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
	for id, until := range f.jobs {
		if !now.Before(until) {
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
