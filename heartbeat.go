package stint

import "github.com/stint-dev/stint/store"

// heartbeatLoop renews the lease of every running job every LeaseTTL/3. One
// goroutine serves the whole pool: it wakes every LeaseTTL/6 and renews the
// leases last renewed at least LeaseTTL/3 ago, so a lease is renewed at most
// LeaseTTL/2 after the previous renewal, well before it expires. The reply
// tells whether a cancel was requested, and a stale-lease rejection that the
// job is gone; either cancels the handler's context (see attempt.observe).
func (p *Pool) heartbeatLoop() {
	defer p.bgDone.Done()
	every := p.cfg.LeaseTTL / 3
	for {
		select {
		case <-p.background:
			return
		case <-p.clock.After(every / 2):
		}
		now := p.clock.Now()
		for _, a := range p.running() {
			if a.lost.Load() || a.sinceBeat(now) < every {
				continue
			}
			if err := a.heartbeat(p.base, nil, ""); err != nil && !store.IsRejection(err) {
				p.log.Warn("stint: heartbeat failed; trying again at the next beat", "job", a.job.rec.ID, "error", err)
			}
		}
	}
}
