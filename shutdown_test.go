package stint_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

func TestShutdownReleasesUnfinishedJobsToTheNextPool(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		quick, stuck := newBlocker(), newBlocker()
		mux := stint.NewMux()
		mux.Handle("quick", quick)
		mux.Handle("stuck", stuck)
		cfg := e.config()
		cfg.ShutdownGrace = 30 * time.Second
		a := e.start(mux, cfg)
		q := e.enqueue(stint.Spec{Kind: "quick"}).ID
		s := e.enqueue(stint.Spec{Kind: "stuck"}).ID
		receive(t, quick.started, "the quick handler to start")
		receive(t, stuck.started, "the stuck handler to start")

		stopped := make(chan error, 1)
		go func() { stopped <- a.Stop(context.Background()) }()
		// Within the grace period a handler may still finish.
		quick.release <- nil
		e.waitState(q, stint.Succeeded)
		// After it, the rest are cancelled and released.
		e.advanceUntil(10*time.Second, "the stuck handler to be cancelled", func() bool { return len(stuck.causes) > 0 })
		if cause := <-stuck.causes; !errors.Is(cause, stint.ErrShutdown) {
			t.Errorf("cause = %v, want ErrShutdown", cause)
		}
		stuck.release <- context.Canceled
		if err := receive(t, stopped, "Stop to return"); err != nil {
			t.Errorf("stop: %v", err)
		}
		j := e.get(s)
		if j.State != stint.Queued || j.Attempt != 1 || j.Owner != "" {
			t.Fatalf("after shutdown the stuck job is %s (attempt %d, owner %q), want queued for the next pool", j.State, j.Attempt, j.Owner)
		}
		if types := e.events(s); !slices.Equal(types[len(types)-2:], []lifecycle.EventType{"stalled", "requeued"}) {
			t.Errorf("events %v: want the release (stalled, requeued) last", types)
		}

		next := stint.NewMux()
		next.HandleFunc("stuck", func(ctx context.Context, j *stint.Job) error { return nil })
		e.start(next, e.config())
		if j := e.waitState(s, stint.Succeeded); j.Attempt != 2 {
			t.Errorf("attempt %d, want 2", j.Attempt)
		}
	})
}

func TestShutdownAbandonsHandlersThatIgnoreCancellation(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	b := newBlocker()
	b.ignoreCtx = true
	p, err := stint.NewPool(e.s, muxOf("deaf", b), e.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	id := e.enqueue(stint.Spec{Kind: "deaf"}).ID
	receive(t, b.started, "the handler to start")

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(ctx) }()
	cancel() // the caller's patience ends
	if err := receive(t, stopped, "Stop to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("stop: %v, want it to wrap context.Canceled", err)
	}
	if j := e.get(id); j.State != stint.Queued || j.Attempt != 1 {
		t.Errorf("the abandoned job is %s (attempt %d), want released and queued", j.State, j.Attempt)
	}
	if err := p.Stop(context.Background()); !errors.Is(err, context.Canceled) {
		t.Errorf("second stop: %v, want the first one's result", err)
	}

	b.release <- nil // the deaf handler finally returns: nothing is reported
	eventually(t, "the handler to return", func() bool { return p.Stats().Running == 0 })
	if j := e.get(id); j.State != stint.Queued {
		t.Errorf("state %s after the abandoned handler returned, want still queued", j.State)
	}
}

func TestPoolStartAndStop(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	mux := muxOf("noop", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil }))

	t.Run("stop before start", func(t *testing.T) {
		p, _ := stint.NewPool(e.s, mux, e.config())
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := p.Start(context.Background()); err == nil {
			t.Error("start after stop succeeded")
		}
	})
	t.Run("start twice", func(t *testing.T) {
		p, _ := stint.NewPool(e.s, mux, e.config())
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err == nil {
			t.Error("second start succeeded")
		}
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	t.Run("no handlers", func(t *testing.T) {
		p, _ := stint.NewPool(e.s, stint.NewMux(), e.config())
		if err := p.Start(context.Background()); err == nil {
			t.Error("a pool without handlers started")
		}
	})
	t.Run("cancelling Start's context stops the pool", func(t *testing.T) {
		p, _ := stint.NewPool(e.s, mux, e.config())
		ctx, cancel := context.WithCancel(context.Background())
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// A graceful stop never costs a retry: a job released by Stop on its last
// attempt is requeued, not dead-lettered, and its failures stay 0. (The
// retry budget counting failures is the lifecycle's; this checks the pool
// releases rather than fails.)
func TestShutdownNeverCostsARetry(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		id := e.enqueue(stint.Spec{Kind: "long", MaxAttempts: 1}).ID
		for round := 1; round <= 3; round++ {
			b := newBlocker()
			p, err := stint.NewPool(e.s, muxOf("long", b), e.config())
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			receive(t, b.started, "the handler to start")
			go func() { b.release <- <-b.causes }() // returns the shutdown cause
			if err := p.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			j := e.get(id)
			if j.State != stint.Queued || j.Attempt != round || j.Failures != 0 {
				t.Fatalf("after stop %d the job is %s, attempt %d, failures %d: want queued, %d, 0", round, j.State, j.Attempt, j.Failures, round)
			}
		}
	})
}
