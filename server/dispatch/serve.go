package dispatch

import (
	"context"
	"slices"
)

// kick starts a claim for l unless one runs or l has nobody parked. d.mu
// is held.
func (d *Dispatcher) kick(l *line) {
	if l.inflight == 0 && len(l.waiters) > 0 && d.cfg.Parallel > 0 {
		l.inflight++
		go d.serve(l)
	}
}

// serve claims for l's waiters, first come first served, one claim per
// waiter under its own params, until l has nobody parked or a claim comes
// back short (the queue is drained). A full claim starts another serve, up
// to Config.Parallel, so a burst of jobs is handed out in parallel while a
// single job costs a single claim. The caller counted serve in l.inflight.
func (d *Dispatcher) serve(l *line) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		w := d.take(l)
		if w == nil || l.drained(d.cfg.Clock.Now(), d.cfg.Recheck) {
			if w != nil {
				d.putBack(l, w)
			}
			l.inflight--
			return
		}
		gen := l.gen
		d.mu.Unlock()
		// The claim is the waiter's, but not cancelled with it: what it
		// leases after the waiter left is released by the waiter's await.
		jobs, err := d.cfg.Store.JobClaim(context.WithoutCancel(w.ctx), w.p)
		d.mu.Lock()
		switch {
		case err != nil:
			w.answer(nil, err) // the waiter's caller retries; the others wait on
			l.inflight--
			return
		case len(jobs) == 0:
			d.putBack(l, w)
		default:
			w.answer(jobs, nil)
		}
		if len(jobs) < w.p.Limit {
			if l.gen == gen {
				l.emptyAt = d.cfg.Clock.Now()
				l.inflight--
				return
			}
			continue // woken meanwhile: there may be more
		}
		if l.inflight < d.cfg.Parallel && len(l.waiters) > 0 {
			l.inflight++
			go d.serve(l)
		}
	}
}

// take removes the first parked waiter from l and marks it taken; nil when
// none is parked. d.mu is held.
func (d *Dispatcher) take(l *line) *waiter {
	for len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		d.count(-1)
		if w.ctx.Err() != nil {
			// Its caller left and has not noticed yet: leasing a job for
			// it would spend an attempt of the job on nobody.
			if w.state.CompareAndSwap(parked, done) {
				w.out <- result{}
			}
			continue
		}
		if w.state.CompareAndSwap(parked, taken) {
			return w
		}
	}
	return nil
}

// Leave answers, with nothing, every parked claim of worker id. The server
// calls it before a worker's release goes through: a worker that gives a
// job back is stopping (or gave up on that job), and a long poll it began
// before and abandoned, whose end the server has not yet seen, must not
// lease the released job straight back to nobody. A worker still running
// simply polls again.
func (d *Dispatcher) Leave(id string) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lines {
		for i := 0; i < len(l.waiters); {
			w := l.waiters[i]
			if w.p.WorkerID != id || !w.state.CompareAndSwap(parked, done) {
				i++
				continue
			}
			l.waiters = slices.Delete(l.waiters, i, i+1)
			d.count(-1)
			w.out <- result{}
		}
	}
}

// putBack returns a taken waiter that got nothing to the head of l, unless
// its caller left meanwhile: then it is answered (with nothing) so that its
// caller, waiting for the claim under way, returns. d.mu is held.
func (d *Dispatcher) putBack(l *line, w *waiter) {
	w.state.Store(parked)
	if w.ctx.Err() != nil && w.state.CompareAndSwap(parked, done) {
		w.out <- result{}
		return
	}
	l.waiters = slices.Insert(l.waiters, 0, w)
	d.count(1)
	d.armFor(w)
}
