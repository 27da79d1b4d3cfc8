package stint

import (
	"context"
	"fmt"
)

// Stop shuts the pool down gracefully. It stops claiming, lets running
// handlers finish for up to Config.ShutdownGrace, then cancels the rest
// (cause [ErrShutdown]); a handler that then returns an error has its job
// released and requeued at once, so another pool picks it up without
// waiting for the lease to expire. Stop returns when every handler has
// returned and every completion is written.
//
// If ctx ends first, the jobs of handlers that still have not returned are
// released from under them (whatever they report later is rejected as
// stale) and Stop returns an error wrapping ctx's. Calling Stop again waits
// for the first call and returns its result.
func (p *Pool) Stop(ctx context.Context) error {
	p.mu.Lock()
	switch p.state {
	case poolNew:
		p.state = poolStopping
		close(p.stopped)
		p.mu.Unlock()
		return nil
	case poolStopping:
		p.mu.Unlock()
		select {
		case <-p.stopped:
			return p.stopErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.state = poolStopping
	p.mu.Unlock()

	p.fetchStop()
	p.fetchDone.Wait()
	handlersDone := make(chan struct{})
	go func() {
		p.runs.Wait()
		close(handlersDone)
	}()
	err := p.drain(ctx, handlersDone)
	p.comp.close()
	close(p.background)
	p.bgDone.Wait()
	p.unsub()
	p.unsubLease()
	if p.maint != nil {
		p.maint.Stop()
	}
	p.stopErr = err
	close(p.stopped)
	return err
}

// drain waits for running handlers through the grace period, then cancels
// them, and when ctx ends releases the jobs of those that never return.
func (p *Pool) drain(ctx context.Context, done <-chan struct{}) error {
	if p.cfg.ShutdownGrace > 0 {
		select {
		case <-done:
			return nil
		case <-p.clock.After(p.cfg.ShutdownGrace):
		case <-ctx.Done():
		}
	}
	for _, a := range p.running() {
		a.cancel(fmt.Errorf("%w: the grace period of %s is over", ErrShutdown, p.cfg.ShutdownGrace))
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	left := p.running()
	for _, a := range left {
		a.forceRelease()
	}
	return fmt.Errorf("stint: stop: %d handlers ignored cancellation and were abandoned, their jobs released: %w", len(left), ctx.Err())
}
