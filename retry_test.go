package stint_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// flakyClaims is a store whose claims fail as the test says: before the
// store is reached (nothing claimed), or after it committed (the reply is
// lost). It records the request id of every claim.
type flakyClaims struct {
	store.Store
	mu       sync.Mutex
	failures []string // "before" or "after", one per coming claim
	ids      []string
	calls    chan struct{}
}

func (s *flakyClaims) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	s.mu.Lock()
	s.ids = append(s.ids, p.RequestID)
	fail := ""
	if len(s.failures) > 0 {
		fail, s.failures = s.failures[0], s.failures[1:]
	}
	s.mu.Unlock()
	defer func() {
		select {
		case s.calls <- struct{}{}:
		default:
		}
	}()
	switch fail {
	case "before":
		return nil, errors.New("dial tcp 127.0.0.1:5432: connection refused")
	case "after":
		if _, err := s.Store.JobClaim(ctx, p); err != nil {
			return nil, err
		}
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return s.Store.JobClaim(ctx, p)
}

func (s *flakyClaims) requestIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// A claim whose reply was lost is retried with the same request id, which
// returns the lease the first try took: the job runs on its first attempt
// instead of waiting for that lease to expire.
func TestALostClaimReplyIsRetriedWithTheSameRequestID(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		fs := &flakyClaims{Store: e.s, failures: []string{"after"}, calls: make(chan struct{}, 64)}
		cfg := e.config()
		cfg.StoreBackoff.Base, cfg.StoreBackoff.Max = time.Millisecond, time.Millisecond
		id := e.enqueue(stint.Spec{Kind: "noop"}).ID
		p, err := stint.NewPool(fs, muxOf("noop", stint.HandlerFunc(func(context.Context, *stint.Job) error { return nil })), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		e.advanceUntil(time.Millisecond, "the job to succeed", func() bool { return e.get(id).State == stint.Succeeded })
		if j := e.get(id); j.Attempt != 1 {
			t.Errorf("the job succeeded on attempt %d, want 1 (the retried claim returns the first lease)", j.Attempt)
		}
		next := e.enqueue(stint.Spec{Kind: "noop"}).ID
		e.advanceUntil(time.Millisecond, "the next job to succeed", func() bool { return e.get(next).State == stint.Succeeded })
		ids := fs.requestIDs()
		if len(ids) < 3 || ids[0] == "" || ids[1] != ids[0] || ids[len(ids)-1] == ids[0] {
			t.Errorf("request ids %q: want the retry to repeat the first and later claims to have fresh ones", ids)
		}
	})
}

// A failing store is retried with exponential backoff on the pool's clock,
// and each failure is logged with the call that failed.
func TestAFailingStoreIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	fs := &flakyClaims{Store: e.s, failures: []string{"before", "before", "before"}, calls: make(chan struct{}, 64)}
	logs := &recordLog{records: make(chan slog.Record, 64)}
	cfg := e.config()
	clk := &waitClock{Manual: e.clk, waits: make(chan time.Duration, 256)}
	cfg.Clock = clk
	cfg.Logger = slog.New(logs)
	cfg.StoreBackoff.Base, cfg.StoreBackoff.Max = time.Second, time.Hour
	p, err := stint.NewPool(fs, muxOf("noop", stint.HandlerFunc(func(context.Context, *stint.Job) error { return nil })), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	for try := 1; try <= 3; try++ {
		receive(t, fs.calls, "a claim")
		r := logs.next(t, "a store call failed; retrying with backoff")
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		delay := attrs["retry_in"].Duration()
		lo, hi := time.Second<<(try-1)/2, time.Second<<(try-1)
		if attrs["call"].String() != "claim" || attrs["tries"].Int64() != int64(try) || delay < lo || delay > hi {
			t.Fatalf("failure %d logged %v: want call=claim tries=%d retry_in in [%s, %s]", try, attrs, try, lo, hi)
		}
		if n := len(fs.requestIDs()); n != try {
			t.Fatalf("%d claims after %d failures: the pool must wait out the backoff", n, try)
		}
		for receive(t, clk.waits, "the pool to wait out the backoff") != delay {
		}
		e.clk.Advance(delay)
	}
	receive(t, fs.calls, "the claim after the store recovered")
}

// waitClock is a manual clock that tells the test each wait asked of it.
type waitClock struct {
	*clock.Manual
	waits chan time.Duration
}

func (c *waitClock) After(d time.Duration) <-chan time.Time {
	ch := c.Manual.After(d)
	select {
	case c.waits <- d:
	default:
	}
	return ch
}

// recordLog is a slog handler that passes each record to the test.
type recordLog struct{ records chan slog.Record }

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.records <- r.Clone():
	default:
	}
	return nil
}
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// next returns the next record whose message contains msg.
func (h *recordLog) next(t *testing.T, msg string) slog.Record {
	t.Helper()
	for {
		r := receive(t, h.records, "a log record "+msg)
		if r.Message == "stint: "+msg {
			return r
		}
	}
}
