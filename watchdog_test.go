package stint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// hangingBeats is a real store whose heartbeats never return until the test
// ends: a network partition or a connection stuck in TCP, as the pool sees it.
type hangingBeats struct {
	store.Store
	release chan struct{}
}

func (h hangingBeats) JobHeartbeat(ctx context.Context, p *store.JobHeartbeatParams) (store.Job, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return store.Job{}, errors.New("partitioned")
}

// TestStuckHeartbeatCancelsTheHandler: when no renewal can get through, the
// pool stops trusting the lease before it can have expired and cancels the
// handler, so the job is never run by this pool and a new owner at once.
func TestStuckHeartbeatCancelsTheHandler(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	causes := make(chan error, 1)
	mux := stint.NewMux()
	mux.HandleFunc("slow", func(ctx context.Context, j *stint.Job) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	p, err := stint.NewPool(hangingBeats{Store: e.s, release: release}, mux, e.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	id := e.enqueue(stint.Spec{Kind: "slow"}).ID
	j := e.waitState(id, stint.Running)
	expires := *j.LeaseExpiresAt

	var cause error
	deadline := time.Now().Add(patience)
	for cause == nil {
		if time.Now().After(deadline) {
			t.Fatal("the handler was never cancelled while its heartbeats hung")
		}
		if e.clk.Now().Before(expires.Add(-time.Second)) {
			e.clk.Advance(time.Second)
		}
		select {
		case cause = <-causes:
		case <-time.After(time.Millisecond):
		}
	}
	if !errors.Is(cause, stint.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
	if now := e.clk.Now(); !now.Before(expires) {
		t.Fatalf("cancelled at %s, not before the lease expired at %s", now, expires)
	}
}
