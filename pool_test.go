package stint_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	mux := muxOf("k", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil }))
	for _, tc := range []struct {
		name string
		cfg  stint.Config
		want string
	}{
		{"zero workers", stint.Config{Queues: map[string]int{"default": 0}}, "give each queue 1 to"},
		{"empty queue name", stint.Config{Queues: map[string]int{"": 3}}, "empty queue name"},
		{"negative lease", stint.Config{LeaseTTL: -time.Second}, "LeaseTTL"},
		{"negative poll", stint.Config{PollInterval: -time.Second}, "PollInterval"},
		{"fetch limit too big", stint.Config{FetchLimit: store.MaxBatch + 1}, "FetchLimit"},
		{"complete batch negative", stint.Config{CompleteBatch: -1}, "CompleteBatch"},
		{"negative kind lease", stint.Config{KindDefaults: map[string]stint.JobDefaults{"k": {LeaseTTL: -time.Second}}}, `Config.KindDefaults["k"].LeaseTTL`},
		{"queue max attempts", stint.Config{QueueDefaults: map[string]stint.JobDefaults{"q": {MaxAttempts: 5000}}}, `Config.QueueDefaults["q"].MaxAttempts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := stint.NewPool(e.s, mux, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewPool: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		c := stint.Config{}.WithDefaults()
		if c.Queues["default"] != 100 || c.LeaseTTL != time.Minute || c.PollInterval != time.Second ||
			c.FetchLimit != 100 || c.CompleteBatch != 1000 || c.ShutdownGrace != 10*time.Second || c.WorkerID == "" {
			t.Errorf("defaults %+v", c)
		}
	})
}

func TestConcurrencyIsLimitedPerQueue(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	var now, most atomic.Int64
	mux := muxOf("count", stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runtime.Gosched()
		now.Add(-1)
		return nil
	}))
	cfg := e.config()
	cfg.Queues = map[string]int{"narrow": 3}
	p := e.start(mux, cfg)
	specs := make([]stint.Spec, 60)
	for i := range specs {
		specs[i] = stint.Spec{Kind: "count", Queue: "narrow"}
	}
	if _, err := e.client.EnqueueMany(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "60 jobs to succeed", func() bool { return p.Stats().Succeeded == 60 })
	if m := most.Load(); m > 3 {
		t.Errorf("%d handlers ran at once, the limit is 3", m)
	}
}

func TestQueuesDoNotBlockEachOther(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	b := newBlocker()
	mux := stint.NewMux()
	mux.Handle("block", b)
	mux.HandleFunc("noop", func(ctx context.Context, j *stint.Job) error { return nil })
	cfg := e.config()
	cfg.Queues = map[string]int{"a": 1, "b": 1}
	e.start(mux, cfg)
	e.enqueue(stint.Spec{Kind: "block", Queue: "a"})
	receive(t, b.started, "queue a's job to start")
	e.waitState(e.enqueue(stint.Spec{Kind: "noop", Queue: "b"}).ID, stint.Succeeded)
	b.release <- nil
}

// A handler running for many lease TTLs keeps its lease: the pool renews it
// every TTL/3 without the handler doing anything.
func TestHeartbeatsKeepTheLease(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	b := newBlocker()
	p := e.start(muxOf("long", b), e.config()) // lease TTL 60s
	id := e.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, b.started, "the handler to start")
	// Move the clock five minutes, a second at a time, but never to within
	// TTL/4+3s of the lease's expiry as the store last recorded it (the pool
	// stops trusting a lease TTL/4 before it can expire): the test must not
	// outrun the heartbeater, only give it every chance to lapse. A lapse
	// would show as a cancelled handler or an expired lease.
	end := e.clk.Now().Add(5 * time.Minute)
	eventually(t, "five minutes to pass", func() bool {
		if len(b.causes) > 0 {
			t.Fatalf("the handler was cancelled: %v", <-b.causes)
		}
		if j := e.get(id); j.LeaseExpiresAt.Sub(e.clk.Now()) > 60*time.Second/4+3*time.Second {
			e.clk.Advance(time.Second)
		}
		return !e.clk.Now().Before(end)
	})
	if n, err := e.s.JobStallExpired(context.Background(), &store.MaintainParams{}); err != nil || n != 0 {
		t.Errorf("the reaper found %d expired leases (%v), want none", n, err)
	}
	beats := 0
	for _, ev := range e.events(id) {
		if ev == "heartbeat" {
			beats++
		}
	}
	if beats < 300/30 {
		t.Errorf("%d heartbeats in 300s with a 60s TTL, want at least one per 30s", beats)
	}
	b.release <- nil
	e.waitState(id, stint.Succeeded)
	if s := p.Stats(); s.Stale != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestMiddlewareWrapsEveryHandler(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	var mu sync.Mutex
	var trail []string
	note := func(s string) {
		mu.Lock()
		trail = append(trail, s)
		mu.Unlock()
	}
	mw := func(name string) stint.Middleware {
		return func(next stint.Handler) stint.Handler {
			return stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
				note(name + ">" + j.Kind())
				return next.Work(ctx, j)
			})
		}
	}
	mux := stint.NewMux()
	mux.Use(mw("outer"))
	mux.HandleFunc("a", func(ctx context.Context, j *stint.Job) error { note("handler a"); return nil })
	mux.Use(mw("inner")) // applies to handlers registered before and after
	mux.HandleFunc("b", func(ctx context.Context, j *stint.Job) error { note("handler b"); return nil })
	if got := strings.Join(mux.Kinds(), ","); got != "a,b" {
		t.Errorf("kinds %s", got)
	}
	e.start(mux, e.config())
	e.waitState(e.enqueue(stint.Spec{Kind: "a"}).ID, stint.Succeeded)
	e.waitState(e.enqueue(stint.Spec{Kind: "b"}).ID, stint.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(trail, " "), "outer>a inner>a handler a outer>b inner>b handler b"; got != want {
		t.Errorf("trail %q, want %q", got, want)
	}
}

func TestMuxRejectsBadRegistrations(t *testing.T) {
	t.Parallel()
	noop := stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error { return nil })
	for _, tc := range []struct {
		name string
		do   func(m *stint.Mux)
	}{
		{"empty kind", func(m *stint.Mux) { m.Handle("", noop) }},
		{"nil handler", func(m *stint.Mux) { m.Handle("k", nil) }},
		{"twice", func(m *stint.Mux) { m.Handle("k", noop); m.Handle("k", noop) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.do(stint.NewMux())
		})
	}
}
