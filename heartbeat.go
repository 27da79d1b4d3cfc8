package stint

import (
	"context"
	"time"

	"github.com/stint-dev/stint/store"
)

// heartbeatLoop renews the lease of every running job every LeaseTTL/3. One
// goroutine serves the whole pool: it wakes every LeaseTTL/6 and starts a
// renewal for each lease last renewed at least LeaseTTL/3 ago, so a lease is
// renewed at most LeaseTTL/2 after the previous renewal, well before it
// expires. It is also the watchdog: a job whose lease can no longer be
// trusted (see attempt.trustUntil) has its handler cancelled. The reply
// tells whether a cancel was requested, and a stale-lease rejection that the
// job is gone; either cancels the handler's context (see attempt.observe).
func (p *Pool) heartbeatLoop() {
	defer p.bgDone.Done()
	// Wake for the shortest lease any job of this pool can hold.
	wake := p.minLeaseTTL() / 6
	for {
		select {
		case <-p.background:
			return
		case <-p.clock.After(wake):
		}
		now := p.clock.Now()
		for _, a := range p.running() {
			if a.lost.Load() {
				continue
			}
			if !now.Before(a.trustUntil()) {
				a.loseLease("no renewal succeeded in time; the lease may have expired")
				continue
			}
			if a.sinceBeat(now) < a.def.LeaseTTL/3 || !a.beating.CompareAndSwap(false, true) {
				continue
			}
			// Each renewal runs on its own, so one slow call delays no other.
			go p.beat(a)
		}
	}
}

// beat renews one attempt's lease, bounded by the lease TTL, and once more
// if a lease notice arrived while it was in flight. The caller set
// a.beating.
func (p *Pool) beat(a *attempt) {
	for {
		ctx, cancel := context.WithTimeout(p.base, a.def.LeaseTTL)
		if err := a.heartbeat(ctx, nil, ""); err != nil && !store.IsRejection(err) {
			p.log.Warn("stint: heartbeat failed; trying again at the next beat", a.jobLog("error", err)...)
		}
		cancel()
		a.beating.Store(false)
		if !a.recheck.Swap(false) || a.lost.Load() || !a.beating.CompareAndSwap(false, true) {
			return
		}
	}
}

// minLeaseTTL is the shortest lease TTL of the pool's kinds and queues.
func (p *Pool) minLeaseTTL() time.Duration {
	ttl := p.cfg.LeaseTTL
	for _, m := range []map[string]JobDefaults{p.cfg.KindDefaults, p.cfg.QueueDefaults} {
		for _, d := range m {
			if d.LeaseTTL > 0 {
				ttl = min(ttl, d.LeaseTTL)
			}
		}
	}
	return ttl
}

// dispatchLeaseNotices renews at once the lease of each running job the
// store says changed under this pool (a cancel was requested, the lease was
// revoked, the attempt timed out or the deadline passed): the reply to that
// heartbeat cancels the handler's context with the matching cause, within
// a round trip instead of at the next beat. Notices are best effort; the
// regular beats remain the fallback.
func (p *Pool) dispatchLeaseNotices(notices <-chan string) {
	defer p.bgDone.Done()
	for {
		select {
		case <-p.background:
			return
		case id := <-notices:
			p.mu.Lock()
			a := p.byJob[id]
			p.mu.Unlock()
			if a == nil || a.lost.Load() || a.settled.Load() {
				continue // its own report is under way and will tell
			}
			a.recheck.Store(true)
			if a.beating.CompareAndSwap(false, true) {
				a.recheck.Store(false)
				go p.beat(a)
			}
		}
	}
}
