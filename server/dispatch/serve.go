package dispatch

import (
	"context"
	"slices"

	"github.com/stint-dev/stint/store"
)

// kick starts serving l's parked waiters when fewer than Config.Parallel
// claims run for l and somebody is parked. Each serve takes every waiter
// parked when it starts, so under load the claims carry more waiters each
// rather than there being more claims: at most Parallel run at once. d.mu
// is held.
func (d *Dispatcher) kick(l *line) {
	if l.inflight < d.cfg.Parallel && len(l.waiters) > 0 {
		d.spawn(l)
	}
}

// spawn starts a serve for l. d.mu is held.
func (d *Dispatcher) spawn(l *line) {
	l.inflight++
	go d.serve(l)
}

// serve claims for l's waiters, first come first served, until l has
// nobody parked or a claim comes back short (the queue is drained). With
// Config.Many one claim serves the waiters at the head of the line (as
// many as Config.Group jobs cover) and deals the jobs it leased among them,
// one at a time in turn, each leased under its waiter's own worker id,
// lease TTL and request id; without it, one claim serves one waiter under
// its own params. A full claim starts another serve, up to
// Config.Parallel, so a burst of jobs is handed out in parallel while a
// single job costs a single claim. The caller counted serve (spawn).
func (d *Dispatcher) serve(l *line) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		ws := d.takeGroup(l)
		if len(ws) == 0 || l.drained(d.cfg.Clock.Now(), d.cfg.Recheck) {
			d.putBack(l, ws)
			d.settleNow(l)
			l.inflight--
			return
		}
		gen := l.gen
		d.mu.Unlock()
		res, err := d.claimFor(ws)
		d.mu.Lock()
		if err != nil {
			for _, w := range ws {
				w.answer(nil, err) // their callers retry; the others wait on
			}
			l.inflight--
			return
		}
		asked, got := 0, 0
		var empty []*waiter
		for i, w := range ws {
			asked += w.p.Limit
			got += len(res[i].Jobs)
			switch {
			case res[i].Err != nil:
				w.answer(nil, res[i].Err)
			case len(res[i].Jobs) == 0 && w.now:
				w.answer(nil, nil) // a ClaimNow does not wait for jobs
			case len(res[i].Jobs) == 0:
				empty = append(empty, w)
			default:
				w.answer(res[i].Jobs, nil)
			}
		}
		d.putBack(l, empty)
		if got < asked {
			if l.gen == gen {
				l.emptyAt = d.cfg.Clock.Now()
				d.settleNow(l)
				l.inflight--
				return
			}
			continue // woken meanwhile: there may be more
		}
		if l.inflight < d.cfg.Parallel && len(l.waiters) > 0 {
			d.spawn(l)
		}
	}
}

// claimFor runs one claim for ws: a JobClaimMany when the store has it and
// ws are several, else the store's claim for the one waiter. The claim is
// the waiters', but not cancelled with them: what it leases for a waiter
// that left meanwhile is released by that waiter's await.
func (d *Dispatcher) claimFor(ws []*waiter) ([]store.ClaimResult, error) {
	ctx := context.WithoutCancel(ws[0].ctx)
	if len(ws) == 1 {
		jobs, err := d.cfg.Store.JobClaim(ctx, ws[0].p)
		return []store.ClaimResult{{Jobs: jobs}}, err
	}
	ps := make([]store.JobClaimParams, len(ws))
	for i, w := range ws {
		ps[i] = *w.p
	}
	return d.cfg.Many.JobClaimMany(ctx, ps)
}

// takeGroup takes the waiters one claim serves from the head of l: the
// first, and with Config.Many those after it while their limits add up to
// at most Config.Group jobs. d.mu is held.
func (d *Dispatcher) takeGroup(l *line) []*waiter {
	w := d.take(l)
	if w == nil {
		return nil
	}
	ws := []*waiter{w}
	if d.cfg.Many == nil {
		return ws
	}
	jobs := w.p.Limit
	for len(ws) < store.MaxClaimsPerCall && len(l.waiters) > 0 && jobs+l.waiters[0].p.Limit <= d.cfg.Group {
		w := d.take(l)
		if w == nil {
			break
		}
		ws = append(ws, w)
		jobs += w.p.Limit
	}
	return ws
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

// putBack returns taken waiters that got nothing to the head of l, in
// their order, unless their caller left meanwhile: such a waiter is
// answered (with nothing) so that its caller, waiting for the claim under
// way, returns. d.mu is held.
func (d *Dispatcher) putBack(l *line, ws []*waiter) {
	back := make([]*waiter, 0, len(ws))
	for _, w := range ws {
		w.state.Store(parked)
		if w.ctx.Err() != nil && w.state.CompareAndSwap(parked, done) {
			w.out <- result{}
			continue
		}
		back = append(back, w)
		d.armFor(w)
	}
	if len(back) > 0 {
		l.waiters = slices.Insert(l.waiters, 0, back...)
		d.count(len(back))
	}
}
