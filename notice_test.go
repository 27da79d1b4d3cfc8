package stint_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// A cancel reaches the handler through the store's lease notices, at once:
// these tests never move the clock, so no heartbeat falls due.

// noticeStore is a store whose lease notices the test sends itself.
type noticeStore struct {
	store.Store
	notices chan string
}

func (s *noticeStore) LeaseNotices() (<-chan string, func()) { return s.notices, func() {} }

func TestALeaseNoticeCancelsTheHandlerAtOnce(t *testing.T) {
	t.Parallel()
	for _, hard := range []bool{false, true} {
		name := map[bool]string{false: "soft", true: "hard"}[hard]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newSQLite(t)
			ns := &noticeStore{Store: e.s, notices: make(chan string, 1)}
			b := newBlocker()
			mux := muxOf("long", b)
			cfg := e.config()
			p, err := stint.NewPool(ns, mux, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Stop(context.Background()) })
			id := e.enqueue(stint.Spec{Kind: "long"}).ID
			receive(t, b.started, "the handler to start")
			mode := map[bool]stint.CancelMode{false: stint.CancelSoft, true: stint.CancelHard}[hard]
			if _, err := e.client.Cancel(context.Background(), id, mode, "stop"); err != nil {
				t.Fatal(err)
			}
			ns.notices <- id
			cause := receive(t, b.causes, "the handler's context to be cancelled")
			want := map[bool]error{false: stint.ErrCancelRequested, true: stint.ErrLeaseLost}[hard]
			if !errors.Is(cause, want) {
				t.Errorf("cause = %v, want %v", cause, want)
			}
			b.release <- context.Canceled
			e.waitState(id, stint.Cancelled)
		})
	}
}

// The same through the real store's notices: in process on SQLite, by
// LISTEN/NOTIFY on PostgreSQL.
func TestCancelReachesTheHandlerThroughTheStore(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		for _, hard := range []bool{false, true} {
			b := newBlocker()
			kind := map[bool]string{false: "soft", true: "hard"}[hard]
			e.start(muxOf(kind, b), e.config())
			id := e.enqueue(stint.Spec{Kind: kind}).ID
			receive(t, b.started, "the handler to start")
			mode := map[bool]stint.CancelMode{false: stint.CancelSoft, true: stint.CancelHard}[hard]
			if _, err := e.client.Cancel(context.Background(), id, mode, "stop"); err != nil {
				t.Fatal(err)
			}
			cause := receive(t, b.causes, kind+" cancel to reach the handler without a heartbeat falling due")
			want := map[bool]error{false: stint.ErrCancelRequested, true: stint.ErrLeaseLost}[hard]
			if !errors.Is(cause, want) {
				t.Errorf("%s: cause = %v, want %v", kind, cause, want)
			}
			b.release <- context.Canceled
			e.waitState(id, stint.Cancelled)
		}
	})
}

// A handler that returns nil after a hard cancel is never reported as a
// success: OnOutcome hears that the job was no longer the pool's.
func TestOnOutcomeNeverReportsARejectedCompletionAsASuccess(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	var mu sync.Mutex
	outcomes := map[string]stint.Outcome{}
	cfg := e.config()
	cfg.OnOutcome = func(o stint.Outcome) {
		mu.Lock()
		outcomes[o.Job.ID] = o
		mu.Unlock()
	}
	b := newBlocker()
	b.ignoreCtx = true
	p := e.start(muxOf("long", b), cfg)
	cancelled := e.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, b.started, "the handler to start")
	if _, err := e.client.Cancel(context.Background(), cancelled, stint.CancelHard, "wrong input"); err != nil {
		t.Fatal(err)
	}
	b.release <- nil // the handler "succeeds" after the cancel
	done := e.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, b.started, "the second handler to start")
	b.release <- nil
	get := func(id string) (stint.Outcome, bool) {
		mu.Lock()
		defer mu.Unlock()
		o, ok := outcomes[id]
		return o, ok
	}
	eventually(t, "both outcomes", func() bool {
		_, a := get(cancelled)
		_, b := get(done)
		return a && b
	})
	// Whether the pool heard of the cancel first (lease lost, nothing
	// reported) or the store refused the complete (stale lease), it is
	// never a success.
	if o, _ := get(cancelled); o.Accepted() || !(errors.Is(o.Err, stint.ErrStaleLease) || errors.Is(o.Err, stint.ErrLeaseLost)) {
		t.Errorf("cancelled job's outcome: op %q, err %v: want it not accepted (stale lease or lease lost)", o.Op, o.Err)
	}
	if o, _ := get(done); !o.Accepted() || o.Job.State != stint.Succeeded || o.Op != "complete" {
		t.Errorf("done job's outcome: op %q, state %s, err %v: want an accepted complete", o.Op, o.Job.State, o.Err)
	}
	if s := p.Stats(); s.Succeeded != 1 {
		t.Errorf("stats %+v: want exactly one success", s)
	}
}

// Notices are best effort: without them a cancel reaches the handler at
// the next heartbeat.
func TestHeartbeatsAreTheFallbackForLostNotices(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	ns := &noticeStore{Store: e.s, notices: make(chan string)} // never delivers
	b := newBlocker()
	p, err := stint.NewPool(ns, muxOf("long", b), e.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	id := e.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, b.started, "the handler to start")
	if _, err := e.client.Cancel(context.Background(), id, stint.CancelSoft, ""); err != nil {
		t.Fatal(err)
	}
	e.advanceUntil(10*time.Second, "the next heartbeat to cancel the handler", func() bool { return len(b.causes) > 0 })
	if cause := <-b.causes; !errors.Is(cause, stint.ErrCancelRequested) {
		t.Errorf("cause = %v, want ErrCancelRequested", cause)
	}
	b.release <- context.Canceled
	e.waitState(id, stint.Cancelled)
}
